# SPDX-License-Identifier: MIT
"""unitexec - run a systemd service's commands the way its unit would,
on a machine where systemd is not PID 1 (CI containers, this machine).

    unitexec.py start UNIT [--log FILE] [--dry-run]
        as root: make the unit's RuntimeDirectory=/StateDirectory=, enter
        new namespaces with its file-system view, run each ExecStartPre=
        and then become ExecStart= (same pid: SIGTERM it to stop the
        service; ExecReload= is the caller's: SIGHUP it), with the unit's
        user, groups, capabilities,
        no-new-privileges, umask, file limit, environment and system call
        filter. Standard output and error go to FILE (default: inherited).

What is applied, and how (everything else in the unit is only read by
`systemd-analyze security`, see docs/deployment.md):
- User=, Group=, SupplementaryGroups= (plus the user's groups from
  /etc/group, as systemd's initgroups), AmbientCapabilities=,
  CapabilityBoundingSet=, NoNewPrivileges=: setpriv(1).
- UMask=, LimitNOFILE=, Environment=, WorkingDirectory / : here.
- PrivateNetwork=, PrivateIPC=, ProtectHostname=: new network, IPC, UTS
  namespaces.
- ProtectSystem=strict (every mount read-only but /dev, /proc, the
  unit's RuntimeDirectory, StateDirectory and ReadWritePaths),
  ProtectHome=yes (empty read-only /home, /root, /run/user),
  PrivateTmp=yes (fresh /tmp, /var/tmp), PrivateDevices=yes (a /dev with
  null, zero, full, random, urandom, tty, shm, mqueue only),
  ProtectKernelTunables= and ProtectControlGroups= (/sys read-only),
  ProcSubset=pid (a /proc with the process directories only): a new mount
  namespace.
- SystemCallFilter= (the groups expanded by `systemd-analyze
  syscall-filter`), SystemCallErrorNumber=, SystemCallArchitectures=native,
  RestrictAddressFamilies= (on socket(2)), MemoryDenyWriteExecute=,
  RestrictNamespaces=yes, LockPersonality=, RestrictSUIDSGID= (the chmod
  calls): a seccomp filter (python3-seccomp) installed last, just before
  the command is executed.
A setting this file does not know and that could change what the service
may do stops it (error), so the emulation never silently drifts from the
unit.
"""
import ctypes
import errno
import grp
import json
import os
import pwd
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile

SETPRIV = shutil.which("setpriv") or "/usr/bin/setpriv"
PYTHON = "/usr/bin/python3"

# What this file applies (see above) or what only describes the service.
HANDLED = {
    "Type", "ExecStartPre", "ExecStart", "ExecReload", "KillMode", "TimeoutStopSec", "Restart",
    "RestartSec", "RestartPreventExitStatus", "LimitNOFILE", "User", "Group",
    "SupplementaryGroups", "AmbientCapabilities", "CapabilityBoundingSet",
    "NoNewPrivileges", "RuntimeDirectory", "RuntimeDirectoryMode", "StateDirectory",
    "StateDirectoryMode", "LogsDirectory", "LogsDirectoryMode", "UMask", "ProtectSystem", "ProtectHome", "PrivateTmp",
    "PrivateDevices", "ProtectKernelTunables", "ProtectControlGroups", "ProcSubset",
    "PrivateNetwork", "PrivateIPC", "ProtectHostname", "RestrictAddressFamilies",
    "SystemCallFilter", "SystemCallErrorNumber", "SystemCallArchitectures",
    "MemoryDenyWriteExecute", "RestrictNamespaces", "LockPersonality",
    "RestrictSUIDSGID", "Environment", "ReadWritePaths",
    # kernel-side settings a service cannot notice beyond the caps it lacks
    # anyway (no CAP_SYS_MODULE, CAP_SYSLOG, CAP_SYS_TIME, CAP_IPC_OWNER):
    "ProtectKernelModules", "ProtectKernelLogs", "ProtectClock", "RestrictRealtime",
    "RemoveIPC", "IPAddressDeny", "PrivateMounts", "KeyringMode",
}

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET = 0x20000, 0x4000000, 0x8000000, 0x40000000
CLONE_NS_FLAGS = 0x20000 | 0x4000000 | 0x8000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x2000000 | 0x80
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_MOVE, MS_REC = 32, 1024, 2048, 4096, 8192, 16384
MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1 << 18, 1 << 21, 1 << 24
MNT_OPTS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
            "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME,
            "strictatime": MS_STRICTATIME}
CAPS = {"CAP_CHOWN": "chown", "CAP_DAC_OVERRIDE": "dac_override",
        "CAP_DAC_READ_SEARCH": "dac_read_search", "CAP_FOWNER": "fowner",
        "CAP_KILL": "kill"}

_libc = ctypes.CDLL(None, use_errno=True)


class UnitError(RuntimeError):
    pass


# ------------------------------------------------------------------ parsing
def parse_unit(path):
    """{key: [values]} of the [Service] section (continuation lines joined)."""
    svc, section, pending = {}, None, ""
    with open(path) as f:
        for raw in f:
            line = pending + raw.rstrip("\n")
            pending = ""
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]")
                continue
            if section != "Service" or "=" not in line:
                continue
            k, v = line.split("=", 1)
            svc.setdefault(k.strip(), []).append(v.strip())
    unknown = sorted(set(svc) - HANDLED)
    if unknown:
        raise UnitError("unitexec does not know %s: teach it before trusting the test"
                        % ", ".join(unknown))
    return svc


def last(svc, key, default=None):
    return svc[key][-1] if svc.get(key) else default


def yes(svc, key):
    return (last(svc, key, "no") or "no").lower() in ("yes", "true", "1", "on")


def words(svc, key):
    out = []
    for v in svc.get(key, []):
        if v == "":
            out = []
        else:
            out.extend(v.split())
    return out


def command(line):
    """argv of an Exec*= line, and whether a failure is ignored ('-')."""
    ignore = False
    while line and line[0] in "-@+!:":
        ignore |= line[0] == "-"
        line = line[1:]
    return shlex.split(line), ignore


# ------------------------------------------------------------------ setup
def _check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def mount(src, target, fstype, flags, data=None):
    _check(_libc.mount(src and src.encode(), target.encode(), fstype and fstype.encode(),
                       ctypes.c_ulong(flags), data and data.encode()), "mount " + target)


def unshare(flags):
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mountinfo():
    """[(mount point, per-mount options)] in mount order."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            p = line.split()
            mp = p[4].encode().decode("unicode_escape")
            out.append((mp, p[5].split(",")))
    return out


def under(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def remount_ro(mp, opts):
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    for o in opts:
        flags |= MNT_OPTS.get(o, 0) & ~MS_RDONLY
    try:
        mount(None, mp, None, flags)
    except OSError as e:
        if e.errno not in (errno.ENOENT, errno.EACCES, errno.EINVAL):
            raise


def private_dev():
    """PrivateDevices=yes: a /dev of pseudo-devices, shm and mqueue."""
    stage = tempfile.mkdtemp(prefix="unitexec-dev-", dir="/run")
    try:
        mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755")
        for n in ("null", "zero", "full", "random", "urandom", "tty"):
            open(os.path.join(stage, n), "w").close()
            mount("/dev/" + n, os.path.join(stage, n), None, MS_BIND)
        for d in ("shm", "mqueue"):
            if os.path.isdir("/dev/" + d):
                os.mkdir(os.path.join(stage, d))
                mount("/dev/" + d, os.path.join(stage, d), None, MS_BIND | MS_REC)
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                             ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
            os.symlink(target, os.path.join(stage, name))
        mount(stage, "/dev", None, MS_MOVE)
    finally:
        os.rmdir(stage)


def namespaces(svc, rw):
    flags = CLONE_NEWNS
    if yes(svc, "PrivateNetwork"):
        flags |= CLONE_NEWNET
    if yes(svc, "PrivateIPC"):
        flags |= CLONE_NEWIPC
    if yes(svc, "ProtectHostname"):
        flags |= CLONE_NEWUTS
    unshare(flags)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    for p in rw:
        mount(p, p, None, MS_BIND | MS_REC)
    if yes(svc, "PrivateDevices"):
        private_dev()
    if yes(svc, "PrivateTmp"):
        for d in ("/tmp", "/var/tmp"):
            mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    strict = last(svc, "ProtectSystem", "no") == "strict"
    if last(svc, "ProtectSystem", "no") not in ("no", "strict"):
        raise UnitError("ProtectSystem=%s: only strict is emulated" % last(svc, "ProtectSystem"))
    keep = ["/dev", "/proc"] + list(rw)
    if yes(svc, "PrivateTmp"):
        keep += ["/tmp", "/var/tmp"]
    if not (yes(svc, "ProtectKernelTunables") or yes(svc, "ProtectControlGroups")):
        keep.append("/sys")
    if strict:
        for mp, opts in mountinfo():
            if not any(under(mp, k) for k in keep):
                remount_ro(mp, opts)
    elif yes(svc, "ProtectKernelTunables") or yes(svc, "ProtectControlGroups"):
        for mp, opts in mountinfo():
            if under(mp, "/sys"):
                remount_ro(mp, opts)
    if yes(svc, "ProtectHome"):
        for d in ("/home", "/root", "/run/user"):
            if os.path.isdir(d):
                mount("tmpfs", d, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "mode=000")
    if last(svc, "ProcSubset", "all") == "pid":
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid")


def service_dirs(svc, uid, gid):
    """RuntimeDirectory=, StateDirectory= and LogsDirectory=, made and owned
    as systemd does."""
    rw = []
    for key, top, mkey in (("RuntimeDirectory", "/run", "RuntimeDirectoryMode"),
                           ("StateDirectory", "/var/lib", "StateDirectoryMode"),
                           ("LogsDirectory", "/var/log", "LogsDirectoryMode")):
        mode = int(last(svc, mkey, "0755"), 8)
        for name in words(svc, key):
            p = os.path.join(top, name)
            os.makedirs(p, mode=mode, exist_ok=True)
            os.chown(p, uid, gid)
            os.chmod(p, mode)
            rw.append(p)
    for p in words(svc, "ReadWritePaths"):
        p = p.lstrip("-")
        if os.path.exists(p):
            rw.append(p)
    return rw


def setpriv_argv(svc, user, group):
    pw = pwd.getpwnam(user)
    gid = grp.getgrnam(group).gr_gid if group else pw.pw_gid
    groups = set(os.getgrouplist(user, gid))
    for g in words(svc, "SupplementaryGroups"):
        groups.add(grp.getgrnam(g).gr_gid)
    groups.discard(gid)
    amb = [CAPS[c] for c in words(svc, "AmbientCapabilities")]
    bnd = [CAPS[c] for c in words(svc, "CapabilityBoundingSet")]
    if set(amb) - set(bnd):
        raise UnitError("ambient capabilities outside the bounding set")
    argv = [SETPRIV, "--reuid=%d" % pw.pw_uid, "--regid=%d" % gid]
    argv.append("--groups=" + ",".join(str(g) for g in sorted(groups)) if groups
                else "--clear-groups")
    argv += ["--inh-caps=-all" + "".join(",+" + c for c in amb),
             "--ambient-caps=-all" + "".join(",+" + c for c in amb),
             "--bounding-set=-all" + "".join(",+" + c for c in bnd)]
    if yes(svc, "NoNewPrivileges"):
        argv.append("--no-new-privs")
    return argv, pw, gid


def environment(svc, pw, rw):
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "LANG": "C.UTF-8", "USER": pw.pw_name, "LOGNAME": pw.pw_name,
           "HOME": pw.pw_dir, "SHELL": pw.pw_shell}
    for key, var, top in (("RuntimeDirectory", "RUNTIME_DIRECTORY", "/run"),
                          ("StateDirectory", "STATE_DIRECTORY", "/var/lib"),
                          ("LogsDirectory", "LOGS_DIRECTORY", "/var/log")):
        names = words(svc, key)
        if names:
            env[var] = ":".join(os.path.join(top, n) for n in names)
    for v in svc.get("Environment", []):
        for kv in shlex.split(v):
            k, _, val = kv.partition("=")
            env[k] = val
    return env


def start(unit, log=None, dry_run=False):
    """Stage 1 (root). Never returns unless dry_run: execs the service."""
    svc = parse_unit(unit)
    user = last(svc, "User")
    if not user:
        raise UnitError("no User=: nothing to emulate")
    pre, pw, gid = setpriv_argv(svc, user, last(svc, "Group"))
    rw = service_dirs(svc, pw.pw_uid, gid)
    # stage 2 reads nothing from the file system: the unit may hide it
    stage2 = [PYTHON, "-c", open(os.path.abspath(__file__)).read(), "filter",
              json.dumps(filter_spec(svc)), "--"]
    main, _ = command(last(svc, "ExecStart"))
    if dry_run:
        print(" ".join(shlex.quote(a) for a in pre + ["--"] + stage2 + main))
        return
    if log is not None:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    nul = os.open("/dev/null", os.O_RDONLY)
    os.dup2(nul, 0)
    os.close(nul)
    namespaces(svc, rw)
    os.chdir("/")
    os.umask(int(last(svc, "UMask", "0022"), 8))
    nofile = last(svc, "LimitNOFILE")
    if nofile:
        n = int(nofile.split(":")[-1])
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        if hard != resource.RLIM_INFINITY and n > hard:
            # raising the hard limit needs CAP_SYS_RESOURCE, which systemd
            # has and a container's root may not
            sys.stderr.write("unitexec: LimitNOFILE=%d above the hard limit %d here: "
                             "using %d\n" % (n, hard, hard))
            n = hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    env = environment(svc, pw, rw)
    for line in svc.get("ExecStartPre", []):
        argv, ignore = command(line)
        rc = subprocess.call(pre + ["--"] + stage2 + argv, env=env)
        if rc != 0 and not ignore:
            sys.stderr.write("unitexec: ExecStartPre=%s failed (%d)\n" % (line, rc))
            sys.exit(rc)
    os.execve(SETPRIV, pre + ["--"] + stage2 + main, env)


# ------------------------------------------------------------------ filter
def syscall_groups():
    """{@group: [names]} from `systemd-analyze syscall-filter`."""
    out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True,
                         text=True, check=True).stdout
    groups, cur = {}, None
    for line in out.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if not line.startswith(" "):
            cur = groups.setdefault(s, [])
        elif cur is not None:
            cur.append(s)
    return groups


def expand(names, groups, seen=None):
    out = set()
    seen = seen or set()
    for n in names:
        if n.startswith("@"):
            if n in seen:
                continue
            seen.add(n)
            out |= expand(groups.get(n, []), groups, seen)
        else:
            out.add(n)
    return out


def filter_spec(svc):
    """What stage 2 needs to build the filter (JSON-able); None: no filter."""
    groups = syscall_groups()
    allow, deny = None, set()
    for v in svc.get("SystemCallFilter", []):
        neg = v.startswith("~")
        names = expand(v.lstrip("~").split(), groups)
        if neg:
            if allow is None:
                deny |= names
            else:
                allow -= names
        else:
            allow = (allow or expand(["@default"], groups)) | names
    if allow is None:
        if deny or svc.get("RestrictAddressFamilies"):
            raise UnitError("only an allow-list SystemCallFilter= is emulated")
        return None
    if last(svc, "SystemCallArchitectures", "native") != "native":
        raise UnitError("SystemCallArchitectures= other than native")
    return {"allow": sorted(allow - deny),
            "errno": last(svc, "SystemCallErrorNumber"),
            "families": words(svc, "RestrictAddressFamilies"),
            "mdwe": yes(svc, "MemoryDenyWriteExecute"),
            "restrict_ns": last(svc, "RestrictNamespaces", "no") in ("yes", "true"),
            "lock_personality": yes(svc, "LockPersonality"),
            "restrict_suid": yes(svc, "RestrictSUIDSGID")}


def filter_and_exec(spec, argv):
    """Stage 2 (the service's user): install the seccomp filter of spec
    (filter_spec), exec argv. libseccomp's filter covers the native
    architecture only: other system call ABIs are killed."""
    if spec is None:
        os.execv(argv[0], argv)
    import seccomp  # python3-seccomp

    allow = set(spec["allow"])
    eno = spec["errno"]
    default = seccomp.ERRNO(getattr(errno, eno)) if eno else seccomp.KILL_PROCESS
    f = seccomp.SyscallFilter(defaction=default)
    M = seccomp.MASKED_EQ
    special = {}

    def rule(name, *args):
        special.setdefault(name, []).append(args)

    fams = spec["families"]
    if fams:
        import socket
        for fam in fams:
            rule("socket", seccomp.Arg(0, seccomp.EQ, getattr(socket, fam)))
    if spec["mdwe"]:
        wx = 0x2 | 0x4
        for v in (0, 0x2, 0x4):
            rule("mmap", seccomp.Arg(2, M, wx, v))
        rule("mprotect", seccomp.Arg(2, M, 0x4, 0))
        rule("pkey_mprotect", seccomp.Arg(2, M, 0x4, 0))
    if spec["restrict_ns"]:
        rule("unshare", seccomp.Arg(0, M, CLONE_NS_FLAGS, 0))
        rule("clone", seccomp.Arg(0, M, CLONE_NS_FLAGS, 0))
        special["setns"] = []
        special["clone3"] = []
        f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    if spec["lock_personality"]:
        rule("personality", seccomp.Arg(0, seccomp.EQ, 0))
        rule("personality", seccomp.Arg(0, seccomp.EQ, 0xffffffff))
    if spec["restrict_suid"]:
        sug = 0o4000 | 0o2000
        rule("chmod", seccomp.Arg(1, M, sug, 0))
        rule("fchmod", seccomp.Arg(1, M, sug, 0))
        rule("fchmodat", seccomp.Arg(2, M, sug, 0))
    for name in sorted(allow):
        if name in special:
            continue
        try:
            f.add_rule(seccomp.ALLOW, name)
        except (RuntimeError, ValueError, OSError):
            pass  # not a system call of this architecture
    for name, rules in special.items():
        if name not in allow:
            continue
        for args in rules:
            f.add_rule(seccomp.ALLOW, name, *args)
    f.load()
    os.execv(argv[0], argv)


def main(args):
    if len(args) >= 2 and args[0] == "start":
        log, dry = None, False
        rest = args[2:]
        while rest:
            if rest[0] == "--log" and len(rest) > 1:
                log, rest = rest[1], rest[2:]
            elif rest[0] == "--dry-run":
                dry, rest = True, rest[1:]
            else:
                raise SystemExit("unitexec: unexpected %s" % rest[0])
        start(args[1], log, dry)
        return 0
    if len(args) >= 4 and args[0] == "filter" and args[2] == "--":
        filter_and_exec(json.loads(args[1]), args[3:])
    raise SystemExit("usage: unitexec.py start UNIT [--log FILE] [--dry-run]")


if __name__ == "__main__" or sys.argv[0] == "-c":
    try:
        sys.exit(main(sys.argv[1:]))
    except UnitError as e:
        sys.stderr.write("unitexec: %s\n" % e)
        sys.exit(2)
