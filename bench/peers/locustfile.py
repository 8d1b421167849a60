"""Locust users for perflab's benchmarks (bench/driver_cost.py, bench/memory.py).

Every user issues keep-alive GETs of the target's small body with no wait between them, as
fast as the target answers: the same closed loop perflab's, k6's and wrk's connections run.
Pick the class on the command line: FastUser (FastHttpUser, geventhttpclient) or PlainUser
(HttpUser, requests).
"""

from locust import FastHttpUser, HttpUser, User, constant, task


class FastUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        self.client.get("/")


class PlainUser(HttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        self.client.get("/")


class IdleUser(User):
    """An idle user for the memory benchmark: logged on, thinking for an hour."""

    wait_time = constant(3600)

    @task
    def nothing(self):
        pass


class IdleFastUser(FastHttpUser):
    """An idle HTTP user (it owns a client, no request made yet) for the memory benchmark."""

    wait_time = constant(3600)

    @task
    def nothing(self):
        pass


class NullUser(User):
    """The null target: a task that does nothing but report itself as a request, so what it
    costs is Locust's own per-task overhead (scheduling, statistics)."""

    wait_time = constant(0)

    @task
    def null(self):
        self.environment.events.request.fire(request_type="null", name="noop", response_time=0.0,
                                             response_length=0, exception=None, context={})
