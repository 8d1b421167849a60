"""Parts of a run on other hosts: drivers on a Ray cluster (`distributed.py`, the coordinator;
`ray_driver.py`, what runs on each node) and a SUT host's monitor probed before the run
(`sut_host.py`)."""
