"""Remote sandboxes: a supervisor beside the worker inside the sandbox, one stream to it, the service's file API.

`interface.py` is what a remote backend supplies (`ByteStream`, `RemoteFiles`) and how it starts the supervisor
(`supervisor_command`); `host.py` is the `SandboxHost` it returns (`SupervisedHost`); `supervisor.py` runs inside.
Nothing here imports a service's SDK: the backends (e2b, k8s) do.
"""

from .host import SupervisedHost
from .interface import (
    SUPERVISOR_CAPABILITIES,
    WORKER_UID,
    ByteStream,
    RemoteFiles,
    StreamClosed,
    supervisor_command,
)
from .link import RemoteError, SupervisorError

__all__ = ["SUPERVISOR_CAPABILITIES", "WORKER_UID", "ByteStream", "RemoteError", "RemoteFiles", "StreamClosed",
           "SupervisedHost", "SupervisorError", "supervisor_command"]
