"""Network interface counters from /proc/net/dev (H): `h.net.<iface>.{rx_bytes,tx_bytes,rx_packets,tx_packets}`.

All interfaces, loopback included: a SUT driven over loopback (the usual single-machine
setup) shows its network traffic only on `lo`. Interfaces are fixed at open time. A '.' in an
interface name (VLANs: eth0.100) becomes '_' so that column names split on '.' unambiguously.
"""

from __future__ import annotations

from . import SourceUnavailable
from .procfs import read_bytes


def _parse(data: bytes) -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = {}
    for line in data.splitlines()[2:]:  # two header lines
        name, _, rest = line.partition(b":")
        fields = rest.split()
        if len(fields) >= 10:
            out[name.strip().decode()] = fields
    return out


class NetdevSource:
    name = "netdev"

    def __init__(self, path: str = "/proc/net/dev") -> None:
        self._path = path
        data = read_bytes(path)
        if data is None:
            raise SourceUnavailable(f"cannot read {path}")
        self._ifaces = sorted(_parse(data))

    def read(self) -> dict[str, float]:
        parsed = _parse(read_bytes(self._path) or b"")
        out: dict[str, float] = {}
        for iface in self._ifaces:
            f = parsed.get(iface)
            if f is None:
                continue
            # Receive: bytes packets errs drop fifo frame compressed multicast; then transmit.
            p = f"h.net.{iface.replace('.', '_')}."
            out[p + "rx_bytes"] = float(f[0])
            out[p + "rx_packets"] = float(f[1])
            out[p + "tx_bytes"] = float(f[8])
            out[p + "tx_packets"] = float(f[9])
        return out

    def close(self) -> None:
        pass
