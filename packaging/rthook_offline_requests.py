"""PyInstaller runtime hook: the frozen program leaves ``requests`` out (Mnemoscope never
goes on the network), but detect-secrets imports it at module level, only to verify keys
online, which the privacy check never asks it to do. A stand-in whose every use fails
takes its place before anything imports it."""

import sys
import types


class RequestException(OSError):
    pass


def _offline(*args: object, **kwargs: object) -> None:
    raise RequestException("Mnemoscope does not go on the network")


_stub = types.ModuleType("requests")
_stub.exceptions = types.SimpleNamespace(RequestException=RequestException)
_stub.get = _stub.post = _offline
_stub.Response = object
sys.modules["requests"] = _stub
