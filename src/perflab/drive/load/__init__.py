"""Load generation: the engine that runs simulated users or arrivals on an event loop
(`engine.py`), a job stream's initiators (`batch.py`), each transaction's parameters
(`params.py`) and deadline (`deadline.py`), and the recorder of every transaction
(`recorder.py`). The run lifecycle around it lives one level up (drive/lifecycle.py)."""
