"""A seccomp-BPF filter built by hand and installed with ctypes.

Why: RLIMIT_NPROC does not bind root, so "no new processes" needs the kernel
to refuse fork/vfork/clone (without CLONE_THREAD)/clone3/execve. The filter
also refuses new sockets (socketpair stays, asyncio needs it), signals to other
processes, calls that name another process by pid, changing other processes'
limits, SysV/POSIX IPC and memfd (shared objects that outlive the worker or
escape its memory limit), and a list of kernel-admin calls.
It is applied to all threads at once (TSYNC), so BLAS threads started while
preloading libraries are covered too.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
CLONE_THREAD = 0x00010000

_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16

# name: (x86_64, aarch64); None where the call does not exist.
_SYSCALLS = {
    "fork": (57, None), "vfork": (58, None), "clone": (56, 220), "clone3": (435, 435),
    "execve": (59, 221), "execveat": (322, 281), "socket": (41, 198),
    "kill": (62, 129), "tkill": (200, 130), "tgkill": (234, 131),
    "rt_sigqueueinfo": (129, 138), "rt_tgsigqueueinfo": (297, 240),
    "pidfd_send_signal": (424, 424), "pidfd_getfd": (438, 438), "prlimit64": (302, 261),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "chroot": (161, 51),
    "unshare": (272, 97), "setns": (308, 268), "bpf": (321, 280),
    "perf_event_open": (298, 241), "kexec_load": (246, 104), "kexec_file_load": (320, 294),
    "init_module": (175, 105), "finit_module": (313, 273), "delete_module": (176, 106),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218),
    "userfaultfd": (323, 282), "io_uring_setup": (425, 425), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427), "personality": (135, 92),
    "open_by_handle_at": (304, 265), "name_to_handle_at": (303, 264), "acct": (163, 89),
    "swapon": (167, 224), "swapoff": (168, 225), "reboot": (169, 142),
    "sethostname": (170, 161), "setdomainname": (171, 162), "syslog": (103, 116),
    "open_tree": (428, 428), "move_mount": (429, 429), "fsopen": (430, 430),
    "fsconfig": (431, 431), "fsmount": (432, 432), "fspick": (433, 433),
    "mount_setattr": (442, 442), "seccomp": (317, 277),
    "chmod": (90, None), "fchmod": (91, 52), "fchmodat": (268, 53), "fchmodat2": (452, 452),
    "utime": (132, None), "utimes": (235, None), "futimesat": (261, None), "utimensat": (280, 88),
    "chown": (92, None), "fchown": (93, 55), "lchown": (94, None), "fchownat": (260, 54),
    "setxattr": (188, 5), "lsetxattr": (189, 6), "fsetxattr": (190, 7), "setxattrat": (463, 463),
    "removexattr": (197, 14), "lremovexattr": (198, 15), "fremovexattr": (199, 16),
    "removexattrat": (466, 466),
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "mq_open": (240, 180), "mq_unlink": (241, 181), "mq_timedsend": (242, 182), "mq_timedreceive": (243, 183),
    "mq_notify": (244, 184), "mq_getsetattr": (245, 185), "memfd_create": (319, 279), "memfd_secret": (447, 447),
    "pidfd_open": (434, 434), "kcmp": (312, 272), "process_madvise": (440, 440),
    "ioprio_set": (251, 30), "ioprio_get": (252, 31),
    "getsid": (124, 156), "getpgid": (121, 155), "sched_getscheduler": (145, 120), "sched_getparam": (143, 121),
    "sched_getaffinity": (204, 123), "sched_setaffinity": (203, 122), "sched_rr_get_interval": (148, 127),
    "sched_getattr": (315, 275), "sched_setattr": (314, 274), "sched_setscheduler": (144, 119),
    "sched_setparam": (142, 118), "getpriority": (140, 141), "setpriority": (141, 140),
    "timer_create": (222, 107), "sendmsg": (46, 211), "sendmmsg": (307, 269), "capget": (125, 90),
    "flock": (73, 32), "fcntl": (72, 25), "ioctl": (16, 29), "prctl": (157, 167),
}
_ARCHES = {"x86_64": (0, 0xC000003E), "amd64": (0, 0xC000003E),
           "aarch64": (1, 0xC00000B7), "arm64": (1, 0xC00000B7)}
DENY_EPERM = """fork vfork ptrace process_vm_readv process_vm_writev mount umount2 pivot_root
chroot unshare setns bpf perf_event_open kexec_load kexec_file_load init_module finit_module
delete_module keyctl add_key request_key userfaultfd io_uring_setup io_uring_enter
io_uring_register personality open_by_handle_at name_to_handle_at acct swapon swapoff
reboot sethostname setdomainname syslog open_tree move_mount fsopen fsconfig fsmount
fspick mount_setattr pidfd_send_signal pidfd_getfd
shmget shmat shmctl shmdt semget semop semctl semtimedop msgget msgsnd msgrcv msgctl
mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr
memfd_create memfd_secret pidfd_open kcmp process_madvise ioprio_set ioprio_get
timer_create sendmsg sendmmsg capget flock""".split()
# A stopped worker must stay stopped between steps: nothing may send it SIGCONT on a timer or on I/O, so POSIX
# timers (any signal on expiry), and an owner or a chosen signal for I/O, lease and directory notices are
# refused (fcntl F_SETOWN/F_SETSIG/F_SETOWN_EX/F_SETLEASE/F_NOTIFY, ioctl FIOSETOWN/SIOCSPGRP/FIOASYNC).
# sendmsg could park open (deleted) files in a socket's queue, out of the disk check's sight; capget answers
# about any pid; flock on a shared read-only library file would lock other sandboxes out.
FCNTL_SIGNAL_COMMANDS = (8, 10, 15, 1024, 1026)
IOCTL_SIGNAL_COMMANDS = (0x8901, 0x8902, 0x5452)
PRCTL_SIGNAL_OPTIONS = (1,)  # PR_SET_PDEATHSIG: a signal sent when the thread that started the worker ends
# SysV and POSIX IPC objects outlive the process and are shared by id; memory in a memfd escapes the
# address-space limit; pidfd_open, kcmp and the calls below would let code probe other processes by pid.
# Calls that take a pid as their first argument: only 0 (itself) or its own pid.
OWN_PID_FIRST = """getsid getpgid sched_getscheduler sched_getparam sched_getaffinity sched_setaffinity
sched_rr_get_interval sched_getattr sched_setattr sched_setscheduler sched_setparam""".split()
OWN_PID_SECOND = ["getpriority", "setpriority"]  # (which, who): only who = 0 or its own pid
DENY_EACCES = ["execve", "execveat", "socket"]
SELF_PID_ONLY = ["kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"]
# Metadata changes, refused only where the worker shares the app's user and sees its files (no private
# view, no id of its own). Mode and time changes succeed without effect, so ``shutil.copy``/``copy2``
# keep working; owner and extended-attribute changes fail with EPERM (copy2 tolerates that).
METADATA_NOOP = "chmod fchmod fchmodat fchmodat2 utime utimes futimesat utimensat".split()
METADATA_EPERM = """chown fchown lchown fchownat setxattr lsetxattr fsetxattr setxattrat removexattr
lremovexattr fremovexattr removexattrat""".split()


class SeccompError(OSError):
    """seccomp is unavailable on this platform or could not be installed."""


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _nr(name: str, arch_index: int) -> int | None:
    return _SYSCALLS[name][arch_index]


def build_filter(arch_index: int, audit_arch: int, pid: int, deny_metadata: bool = False) -> bytes:
    """Assemble the BPF program (labels resolved to relative jumps)."""
    prog: list[tuple[int, int | str, int | str, int]] = []  # (code, jump if true, jump if false, k); str: a label
    labels: dict[str, int] = {}

    def ins(code: int, k: int = 0, jt: int | str = 0, jf: int | str = 0) -> None:
        prog.append((code, jt, jf, k))

    def label(name: str) -> None:
        labels[name] = len(prog)

    ins(_LD_W_ABS, _OFF_ARCH)
    ins(_JEQ, audit_arch, 0, "eperm")
    ins(_LD_W_ABS, _OFF_NR)
    if arch_index == 0:
        ins(_JGE, 0x40000000, "eperm", 0)  # x32 ABI calls
    groups = [(DENY_EPERM, "eperm"), (DENY_EACCES, "eacces"), (["clone3"], "enosys"),
              (["clone"], "clone"), (SELF_PID_ONLY, "selfpid"), (["prlimit64"], "prlimit"),
              (OWN_PID_FIRST, "prlimit"), (OWN_PID_SECOND, "second_arg"), (["fcntl"], "fcntl"),
              (["ioctl"], "ioctl"), (["prctl"], "prctl")]
    if deny_metadata:
        groups += [(METADATA_EPERM, "eperm"), (METADATA_NOOP, "noop")]
    for names, target in groups:
        for name in names:
            nr = _nr(name, arch_index)
            if nr is not None:
                ins(_JEQ, nr, target, 0)
    ins(_RET, RET_ALLOW)
    label("clone")
    ins(_LD_W_ABS, _OFF_ARG0)
    ins(_JSET, CLONE_THREAD, "allow", "eperm")
    label("fcntl")
    ins(_LD_W_ABS, _OFF_ARG0 + 8)
    for command in FCNTL_SIGNAL_COMMANDS:
        ins(_JEQ, command, "eperm", 0)
    ins(_RET, RET_ALLOW)
    label("ioctl")
    ins(_LD_W_ABS, _OFF_ARG0 + 8)
    for command in IOCTL_SIGNAL_COMMANDS:
        ins(_JEQ, command, "eperm", 0)
    ins(_RET, RET_ALLOW)
    label("prctl")
    ins(_LD_W_ABS, _OFF_ARG0)
    for option in PRCTL_SIGNAL_OPTIONS:
        ins(_JEQ, option, "eperm", 0)
    ins(_RET, RET_ALLOW)
    label("second_arg")
    ins(_LD_W_ABS, _OFF_ARG0 + 8)
    ins(_JEQ, 0, "allow", "pidcheck")
    label("prlimit")
    ins(_LD_W_ABS, _OFF_ARG0)
    ins(_JEQ, 0, "allow", "pidcheck")
    label("selfpid")
    ins(_LD_W_ABS, _OFF_ARG0)
    label("pidcheck")
    ins(_JEQ, pid, "allow", "eperm")
    label("allow")
    ins(_RET, RET_ALLOW)
    label("eperm")
    ins(_RET, RET_ERRNO | errno.EPERM)
    label("eacces")
    ins(_RET, RET_ERRNO | errno.EACCES)
    label("enosys")
    ins(_RET, RET_ERRNO | errno.ENOSYS)  # glibc falls back from clone3 to clone
    label("noop")
    ins(_RET, RET_ERRNO | 0)  # the call returns 0 without running

    out = bytearray()
    for i, (code, jump_true, jump_false, k) in enumerate(prog):
        jt = labels[jump_true] - i - 1 if isinstance(jump_true, str) else jump_true
        jf = labels[jump_false] - i - 1 if isinstance(jump_false, str) else jump_false
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise SeccompError("BPF jump out of range")
        out += struct.pack("=HBBI", code, jt, jf, k)
    return bytes(out)


def install(deny_metadata: bool = False) -> str:
    """Install the filter on every thread of this process; returns the arch name."""
    machine = platform.machine().lower()
    if machine not in _ARCHES:
        raise SeccompError(f"no seccomp syscall table for {machine}")
    arch_index, audit_arch = _ARCHES[machine]
    code = build_filter(arch_index, audit_arch, os.getpid(), deny_metadata)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Prog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SeccompError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
    seccomp_nr = _nr("seccomp", arch_index)
    if seccomp_nr is None:
        raise SeccompError(errno.ENOSYS, f"no seccomp() system call number for {machine}")
    res = libc.syscall(ctypes.c_long(seccomp_nr), ctypes.c_uint(SECCOMP_SET_MODE_FILTER),
                       ctypes.c_uint(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(prog))
    if res != 0:
        raise SeccompError(ctypes.get_errno() or errno.EINVAL, f"seccomp() failed (result {res})")
    return machine
