"""``network = true`` is outbound network only (Trust IV, class 5), on both backends.

A task's declared ``[prepare] network`` (and the requirements build) once got the host's own
network namespace: its loopback services, its abstract unix sockets, its ``/proc/net``. Now a
sandbox with the network has a namespace of its own, joined to the outside by user-mode NAT
(slirp4netns). The attacker here owns the command and tries each of those; a listener on the
host's own non-loopback address stands for "the internet" (nothing else is reachable in CI),
and must still answer through the NAT. Run as root, as CI does.
"""

from __future__ import annotations

import json
import socket
import textwrap
import threading
import uuid

import pytest

from sandbox import SandboxLimits
from tests.sandbox.backends import BACKEND_PARAMS, make_sandbox, require_nat

ISOLATING = [p for p in BACKEND_PARAMS if p.id not in ("local-plain", "local-bundled-bwrap")]

PROBE = textwrap.dedent("""
    import json, socket, sys
    loop_port, abstract, out_addr, out_port = sys.argv[1:5]
    got = {}
    def tcp(addr, port):
        try:
            with socket.create_connection((addr, int(port)), timeout=3) as s:
                s.sendall(b"from the sandbox")
                return True
        except OSError as err:
            return str(err)
    def gateway():
        for line in open("/proc/net/route").read().splitlines()[1:]:
            f = line.split()
            if f[1] == "00000000":
                return socket.inet_ntoa(bytes.fromhex(f[2])[::-1])
        return None
    got["gateway"] = gateway()
    got["loopback"] = tcp("127.0.0.1", loop_port)
    got["via_gateway"] = tcp(got["gateway"], loop_port) if got["gateway"] else "no gateway"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(3)
            s.connect("\\0" + abstract)
            s.sendall(b"from the sandbox")
        got["abstract"] = True
    except OSError as err:
        got["abstract"] = str(err)
    hex_port = ":%04X" % int(loop_port)
    got["proc_net_sees_host"] = any(hex_port in line.split()[1] for line in
                                    open("/proc/net/tcp").read().splitlines()[1:])
    got["outbound"] = tcp(out_addr, out_port)
    print(json.dumps(got))
""")


class Heard:
    """A listening socket on the host that records who connected."""

    def __init__(self, family: int, address) -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(8)
        self.heard: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            while True:
                conn, _ = self.sock.accept()
                with conn:
                    conn.settimeout(2)
                    try:
                        self.heard.append(conn.recv(100))
                    except OSError:
                        self.heard.append(b"")
        except OSError:
            pass

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def close(self) -> None:
        self.sock.close()


def host_address() -> str:
    """This host's address on the interface of its default route (what the internet sees)."""
    with open("/proc/net/route") as f:
        for line in f.read().splitlines()[1:]:
            fields = line.split()
            if fields[1] == "00000000":
                gateway = socket.inet_ntoa(bytes.fromhex(fields[2])[::-1])
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    s.connect((gateway, 9))
                    return s.getsockname()[0]
    pytest.fail("this test needs a host with a default route (a non-loopback address)")


@pytest.fixture
def host_services():
    """What the host offers on its own: a loopback TCP service, an abstract unix socket, and
    a service on its network address (standing for the outside world)."""
    name = f"labcoat-test-{uuid.uuid4().hex[:8]}"
    loop = Heard(socket.AF_INET, ("127.0.0.1", 0))
    abstract = Heard(socket.AF_UNIX, "\0" + name)
    outside = Heard(socket.AF_INET, (host_address(), 0))
    yield {"loop": loop, "abstract": abstract, "abstract_name": name, "outside": outside}
    for s in (loop, abstract, outside):
        s.close()


def probe(sb, services) -> dict:
    out = services["outside"]
    r = sb.exec([sb.python, "-c", PROBE, str(services["loop"].port), services["abstract_name"],
                 out.sock.getsockname()[0], str(out.port)], timeout=60)
    assert r.ok, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("backend", ISOLATING)
def test_network_is_outbound_only(tmp_path, backend, host_services):
    require_nat()
    with make_sandbox(backend, tmp_path, SandboxLimits(timeout=60, network=True)) as sb:
        got = probe(sb, host_services)
    assert got["loopback"] is not True, got
    assert got["via_gateway"] is not True, got  # slirp's 10.0.2.2 is the host's loopback unless refused
    assert got["abstract"] is not True, got
    assert host_services["loop"].heard == [] and host_services["abstract"].heard == []
    assert got["proc_net_sees_host"] is False, got
    # ...and the outside still answers, through the NAT
    assert got["outbound"] is True, got
    assert host_services["outside"].heard == [b"from the sandbox"]


@pytest.mark.parametrize("backend", ISOLATING)
def test_without_network_nothing_answers(tmp_path, backend, host_services):
    with make_sandbox(backend, tmp_path, SandboxLimits(timeout=60)) as sb:
        got = probe(sb, host_services)
    assert got["gateway"] is None and got["outbound"] is not True, got
    assert got["abstract"] is not True and got["proc_net_sees_host"] is False, got
    assert host_services["outside"].heard == []


def test_no_nat_tool_is_a_clear_refusal_never_the_hosts_network(tmp_path, monkeypatch):
    """Without slirp4netns, a sandbox with the network does not open (no silent fallback to
    the host's network, nor to none)."""
    from sandbox import SandboxError, netns

    monkeypatch.setattr(netns, "nat_tool", lambda: None)
    with pytest.raises(SandboxError, match="slirp4netns"):
        with make_sandbox("local", tmp_path, SandboxLimits(timeout=30, network=True)) as sb:
            sb.exec(["true"])


def test_the_report_says_outbound_only(tmp_path):
    require_nat()
    with make_sandbox("local", tmp_path, SandboxLimits(timeout=30, network=True)) as sb:
        said = " ".join(sb.describe().warnings)
    assert "outbound" in said and "host's" not in said, said



VSOCK = textwrap.dedent("""
    import errno, socket
    got = []
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
        try:
            socket.socket(socket.AF_VSOCK, kind).close()
            got.append("opened")
        except OSError as err:
            got.append(errno.errorcode.get(err.errno, str(err.errno)))
    print(got)
""")


@pytest.mark.parametrize("backend", ISOLATING)
@pytest.mark.parametrize("network", [False, True], ids=["no-network", "network"])
def test_vsock_is_refused(tmp_path, backend, network):
    """A VM's vsock reaches its hypervisor and the host's vsock services, and no network
    namespace covers it: socket(AF_VSOCK) is refused by the seccomp filter (EAFNOSUPPORT, as
    on a kernel without vsock), with the network or without, on every isolating backend."""
    if network:
        require_nat()
    with make_sandbox(backend, tmp_path, SandboxLimits(timeout=30, network=network)) as sb:
        r = sb.exec([sb.python, "-c", VSOCK])
    assert r.ok, r.stderr
    assert r.stdout.strip() == "['EAFNOSUPPORT', 'EAFNOSUPPORT', 'EAFNOSUPPORT']", r.stdout
