"""offload-remote: a device in another process, over a local socket to a server running offload's
host backend (``_server``); the example of a device whose memory the client cannot touch."""

from ._client import RemoteBackend

__all__ = ["RemoteBackend"]
