"""A seccomp-BPF filter built by hand and installed with ctypes.

Why: RLIMIT_NPROC does not bind root, so "no new processes" needs the kernel
to refuse fork/vfork/clone (without CLONE_THREAD)/clone3/execve. The filter
also refuses new sockets (socketpair stays, asyncio needs it) and naming any
socket address (bind, connect, listen, sendto with an address: an abstract UNIX
name could be squatted or reached), file-system watches (inotify, fanotify: they
would show which files other sessions write or open), signals to other
processes, every call that names another process by pid (see PID_RULES),
changing other processes' limits, SysV/POSIX IPC and memfd (shared objects that
outlive the worker or escape its memory limit), and a list of kernel-admin calls.
It is applied to all threads at once (TSYNC), so BLAS threads started while
preloading libraries are covered too. The sandbox worker and the upload preview
child install the same filter (confinement.py).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from collections.abc import Callable

PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
CLONE_THREAD = 0x00010000

_LD_W_ABS = 0x20
_AND_K = 0x54
_JA = 0x05
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16

# name: (x86_64, aarch64); None where the call does not exist.
_SYSCALLS = {
    "fork": (57, None), "vfork": (58, None), "clone": (56, 220), "clone3": (435, 435),
    "execve": (59, 221), "execveat": (322, 281), "socket": (41, 198),
    "bind": (49, 200), "connect": (42, 203), "listen": (50, 201), "sendto": (44, 206),
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
    "mount_setattr": (442, 442), "open_tree_attr": (467, 467), "file_setattr": (469, 469),
    "seccomp": (317, 277), "statmount": (457, 457), "listmount": (458, 458),
    "inotify_init": (253, None), "inotify_init1": (294, 26), "inotify_add_watch": (254, 27),
    "inotify_rm_watch": (255, 28), "fanotify_init": (300, 262), "fanotify_mark": (301, 263),
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
    "pidfd_open": (434, 434), "kcmp": (312, 272), "process_madvise": (440, 440), "process_mrelease": (448, 448),
    "ioprio_set": (251, 30), "ioprio_get": (252, 31), "capget": (125, 90), "capset": (126, 91),
    "getsid": (124, 156), "getpgid": (121, 155), "setpgid": (109, 154), "sched_getscheduler": (145, 120),
    "sched_getparam": (143, 121), "sched_getaffinity": (204, 123), "sched_setaffinity": (203, 122),
    "sched_rr_get_interval": (148, 127), "sched_getattr": (315, 275), "sched_setattr": (314, 274),
    "sched_setscheduler": (144, 119), "sched_setparam": (142, 118), "getpriority": (140, 141),
    "setpriority": (141, 140), "get_robust_list": (274, 100), "migrate_pages": (256, 238),
    "move_pages": (279, 239), "wait4": (61, 260), "waitid": (247, 95), "futex": (202, 98),
    "clock_gettime": (228, 113), "clock_getres": (229, 114), "clock_nanosleep": (230, 115),
    "clock_settime": (227, 112), "clock_adjtime": (305, 266),
    "timer_create": (222, 107), "sendmsg": (46, 211), "sendmmsg": (307, 269),
    "flock": (73, 32), "fcntl": (72, 25), "ioctl": (16, 29), "prctl": (157, 167),
}
_ARCHES = {"x86_64": (0, 0xC000003E), "amd64": (0, 0xC000003E),
           "aarch64": (1, 0xC00000B7), "arm64": (1, 0xC00000B7)}
DENY_EPERM = """fork vfork ptrace process_vm_readv process_vm_writev mount umount2 pivot_root
chroot unshare setns bpf perf_event_open kexec_load kexec_file_load init_module finit_module
delete_module keyctl add_key request_key userfaultfd io_uring_setup io_uring_enter
io_uring_register personality open_by_handle_at name_to_handle_at acct swapon swapoff
reboot sethostname setdomainname syslog open_tree move_mount fsopen fsconfig fsmount
fspick mount_setattr open_tree_attr statmount listmount pidfd_send_signal pidfd_getfd
shmget shmat shmctl shmdt semget semop semctl semtimedop msgget msgsnd msgrcv msgctl
mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr
memfd_create memfd_secret pidfd_open kcmp process_madvise process_mrelease ioprio_set ioprio_get
timer_create sendmsg sendmmsg capget capset flock setpgid
inotify_init inotify_init1 inotify_add_watch inotify_rm_watch fanotify_init fanotify_mark
bind connect listen""".split()
# A stopped worker must stay stopped between steps: nothing may send it SIGCONT on a timer or on I/O, so POSIX
# timers (any signal on expiry), and an owner or a chosen signal for I/O, lease and directory notices are
# refused (fcntl F_SETOWN/F_SETSIG/F_SETOWN_EX/F_SETLEASE/F_NOTIFY, ioctl FIOSETOWN/SIOCSPGRP/FIOASYNC).
# sendmsg could park open (deleted) files in a socket's queue, out of the disk check's sight; flock on a shared
# read-only library file would lock other sandboxes out. The only sockets are socketpair()'s: naming an address
# (bind, connect, listen, sendto to an address) is refused, so no abstract UNIX name can be taken or reached.
# inotify and fanotify would show which files of the shared library folders (or, without the private view,
# of any folder) other processes open or write.
FCNTL_SIGNAL_COMMANDS = (8, 10, 15, 1024, 1026)
IOCTL_SIGNAL_COMMANDS = (0x8901, 0x8902, 0x5452)
# PR_SET_PDEATHSIG: a signal sent when the thread that started the worker ends; PR_SET_PTRACER names a pid
# (and answers differently when it does not exist).
PRCTL_REFUSED_OPTIONS = (1, 0x59616D61)
# Every call that takes a pid or tid answers the same whether that process lives or not (a live pid is
# information: another session's worker, the app). Refused outright above: ptrace, process_vm_*, kcmp,
# pidfd_*, process_madvise/mrelease, ioprio_*, capget (its header names a pid), setpgid, perf_event_open.
# Allowed only for itself (0 or its own pid), EPERM otherwise:
OWN_PID_FIRST = """getsid getpgid sched_getscheduler sched_getparam sched_getaffinity sched_setaffinity
sched_rr_get_interval sched_getattr sched_setattr sched_setscheduler sched_setparam prlimit64
get_robust_list migrate_pages move_pages""".split()
PRIORITY = ["getpriority", "setpriority"]  # (which, who): who 0, or its own pid with which = PRIO_PROCESS
SELF_PID_ONLY = ["kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"]  # tgkill's tid: own group
NO_CHILDREN = ["wait4", "waitid"]  # it can start no process, so it never has a child: ECHILD for every pid
# CPU-time clocks name a process in the clock id (~pid << 3 | kind): another process's clock would answer
# with its CPU time. Thread clocks (bit 2) are limited to its own threads by the kernel.
CPU_CLOCKS = "clock_gettime clock_getres clock_nanosleep clock_settime clock_adjtime".split()
# PI futex operations look up the owner tid written in the futex word (ESRCH when it does not exist).
FUTEX_PI_OPERATIONS = (6, 7, 8, 11, 12, 13)
FUTEX_CMD_MASK = 0x7F
DENY_EACCES = ["execve", "execveat", "socket"]
# Metadata changes, refused only where the worker shares the app's user and sees its files (no private
# view, no id of its own). Mode and time changes succeed without effect, so ``shutil.copy``/``copy2``
# keep working; owner and extended-attribute changes fail with EPERM (copy2 tolerates that).
METADATA_NOOP = "chmod fchmod fchmodat fchmodat2 utime utimes futimesat utimensat".split()
METADATA_EPERM = """chown fchown lchown fchownat setxattr lsetxattr fsetxattr setxattrat removexattr
lremovexattr fremovexattr removexattrat file_setattr""".split()
_CHUNK = 100  # system calls per block: a conditional jump reaches at most 255 instructions


class SeccompError(OSError):
    """seccomp is unavailable on this platform or could not be installed."""


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _nr(name: str, arch_index: int) -> int | None:
    return _SYSCALLS[name][arch_index]


class _Assembler:
    """Instructions with named labels, resolved to relative jumps at the end."""

    def __init__(self) -> None:
        self.prog: list[tuple[int, int | str, int | str, int | str]] = []  # (code, jt, jf, k); str: a label
        self.labels: dict[str, int] = {}

    def ins(self, code: int, k: int | str = 0, jt: int | str = 0, jf: int | str = 0) -> None:
        self.prog.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.prog)

    def ret(self, value: int) -> None:
        self.ins(_RET, value)

    def load_arg(self, index: int, high: bool = False) -> None:
        self.ins(_LD_W_ABS, _OFF_ARG0 + 8 * index + (4 if high else 0))

    def code(self) -> bytes:
        out = bytearray()
        for i, (op, jump_true, jump_false, k) in enumerate(self.prog):
            jt = self.labels[jump_true] - i - 1 if isinstance(jump_true, str) else jump_true
            jf = self.labels[jump_false] - i - 1 if isinstance(jump_false, str) else jump_false
            value = self.labels[k] - i - 1 if isinstance(k, str) else k
            if not (0 <= jt < 256 and 0 <= jf < 256):
                raise SeccompError("BPF jump out of range")
            out += struct.pack("=HBBI", op, jt, jf, value & 0xFFFFFFFF)
        return bytes(out)


Handler = Callable[[_Assembler, str], None]  # emits a block's checks (labels prefixed with the block's name)


def _returns(value: int) -> Handler:
    return lambda asm, block: asm.ret(value)


def _refuses_values(arg: int, values: tuple[int, ...], mask: int | None = None) -> Handler:
    """Allowed unless argument `arg` (masked) is one of `values` (EPERM)."""
    def emit(asm: _Assembler, block: str) -> None:
        asm.load_arg(arg)
        if mask is not None:
            asm.ins(_AND_K, mask)
        for value in values:
            asm.ins(_JEQ, value, block + ".deny", 0)
        asm.ret(RET_ALLOW)
        asm.label(block + ".deny")
        asm.ret(RET_ERRNO | errno.EPERM)
    return emit


def _own_pid(arg: int, pid: int, zero_is_self: bool = True) -> Handler:
    """Allowed when argument `arg` is its own pid (or 0, which means itself); EPERM for any other."""
    def emit(asm: _Assembler, block: str) -> None:
        asm.load_arg(arg)
        if zero_is_self:
            asm.ins(_JEQ, 0, block + ".allow", 0)
        asm.ins(_JEQ, pid, block + ".allow", 0)
        asm.ret(RET_ERRNO | errno.EPERM)
        asm.label(block + ".allow")
        asm.ret(RET_ALLOW)
    return emit


def _priority(pid: int) -> Handler:
    """getpriority/setpriority(which, who): who 0 is itself (its process, group or user); its own pid only as
    a process (with PRIO_USER the number would name a user id)."""
    def emit(asm: _Assembler, block: str) -> None:
        asm.load_arg(1)
        asm.ins(_JEQ, 0, block + ".allow", 0)
        asm.load_arg(0)
        asm.ins(_JEQ, 0, 0, block + ".deny")
        asm.load_arg(1)
        asm.ins(_JEQ, pid, block + ".allow", block + ".deny")
        asm.label(block + ".allow")
        asm.ret(RET_ALLOW)
        asm.label(block + ".deny")
        asm.ret(RET_ERRNO | errno.EPERM)
    return emit


def _clone() -> Handler:
    def emit(asm: _Assembler, block: str) -> None:
        asm.load_arg(0)
        asm.ins(_JSET, CLONE_THREAD, 0, 1)
        asm.ret(RET_ALLOW)
        asm.ret(RET_ERRNO | errno.EPERM)
    return emit


def _cpu_clock(pid: int) -> Handler:
    """Clock ids >= 0 (the usual clocks), thread CPU clocks, and its own process's CPU clocks (pid 0 or its
    pid); another process's CPU clock gets EINVAL, what the kernel says for a pid that does not exist."""
    own = (~pid << 3) & 0xFFFFFFF8

    def emit(asm: _Assembler, block: str) -> None:
        asm.load_arg(0)
        asm.ins(_JGE, 0x80000000, 0, block + ".allow")
        asm.ins(_JSET, 4, block + ".allow", 0)
        asm.ins(_AND_K, 0xFFFFFFF8)
        asm.ins(_JEQ, 0xFFFFFFF8, block + ".allow", 0)
        asm.ins(_JEQ, own, block + ".allow", 0)
        asm.ret(RET_ERRNO | errno.EINVAL)
        asm.label(block + ".allow")
        asm.ret(RET_ALLOW)
    return emit


def _no_address() -> Handler:
    """sendto only without a destination address (send() on a connected socketpair)."""
    def emit(asm: _Assembler, block: str) -> None:
        asm.load_arg(4)
        asm.ins(_JEQ, 0, 0, block + ".deny")
        asm.load_arg(4, high=True)
        asm.ins(_JEQ, 0, 0, block + ".deny")
        asm.ret(RET_ALLOW)
        asm.label(block + ".deny")
        asm.ret(RET_ERRNO | errno.EPERM)
    return emit


def rules(pid: int, deny_metadata: bool = False) -> list[tuple[list[str], Handler]]:
    """Which calls get which checks; every call not named is allowed."""
    table: list[tuple[list[str], Handler]] = [
        (DENY_EPERM, _returns(RET_ERRNO | errno.EPERM)), (DENY_EACCES, _returns(RET_ERRNO | errno.EACCES)),
        (["clone3"], _returns(RET_ERRNO | errno.ENOSYS)),  # glibc falls back from clone3 to clone
        (["clone"], _clone()), (SELF_PID_ONLY, _own_pid(0, pid, zero_is_self=False)),
        (OWN_PID_FIRST, _own_pid(0, pid)), (PRIORITY, _priority(pid)),
        (NO_CHILDREN, _returns(RET_ERRNO | errno.ECHILD)), (CPU_CLOCKS, _cpu_clock(pid)),
        (["futex"], _refuses_values(1, FUTEX_PI_OPERATIONS, FUTEX_CMD_MASK)), (["sendto"], _no_address()),
        (["fcntl"], _refuses_values(1, FCNTL_SIGNAL_COMMANDS)), (["ioctl"], _refuses_values(1, IOCTL_SIGNAL_COMMANDS)),
        (["prctl"], _refuses_values(0, PRCTL_REFUSED_OPTIONS)),
    ]
    if deny_metadata:
        table += [(METADATA_EPERM, _returns(RET_ERRNO | errno.EPERM)),
                  (METADATA_NOOP, _returns(RET_ERRNO | 0))]  # the call returns 0 without running
    return table


def build_filter(arch_index: int, audit_arch: int, pid: int, deny_metadata: bool = False) -> bytes:
    """Assemble the BPF program: one block per rule (its system call numbers, then its checks)."""
    asm = _Assembler()
    asm.ins(_LD_W_ABS, _OFF_ARCH)
    asm.ins(_JEQ, audit_arch, 1, 0)
    asm.ret(RET_ERRNO | errno.EPERM)
    asm.ins(_LD_W_ABS, _OFF_NR)
    if arch_index == 0:
        asm.ins(_JGE, 0x40000000, 0, 1)  # x32 ABI calls
        asm.ret(RET_ERRNO | errno.EPERM)
    blocks = 0
    for names, handler in rules(pid, deny_metadata):
        numbers = [nr for nr in (_nr(name, arch_index) for name in names) if nr is not None]
        for start in range(0, len(numbers), _CHUNK):
            block = f"b{blocks}"
            blocks += 1
            for nr in numbers[start:start + _CHUNK]:
                asm.ins(_JEQ, nr, block, 0)
            asm.ins(_JA, block + ".end")  # the accumulator still holds the call's number
            asm.label(block)
            handler(asm, block)
            asm.label(block + ".end")
    asm.ret(RET_ALLOW)
    return asm.code()


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
