"""Run Debian's real Ganeti clients on request, one fork per command (run by /usr/bin/python3).

This file is not imported by the test process: the oracle runs it with Debian's
interpreter (``/usr/bin/python3 -s``, PYTHONHASHSEED=0), once per side, in that side's
environment (GANETI_ROOTDIR, GANETI_HOSTNAME; for the real cluster inside its
namespace).  It imports the real ``ganeti.client.gnt_*`` modules and the RAPI
client once; each request then forks a child that runs the unmodified
``Main()`` of the client with its own argv, stdin and output files, exactly as
``/usr/sbin/gnt-*`` would, minus the ~0.2 s interpreter and import start-up.
Anything that is not a gnt-* client (htools, shell commands) runs as a plain
subprocess.

Protocol: one JSON object per line on stdin, one JSON answer per line on stdout.
  {"op": "run", "argv": [...], "stdin": str|null, "timeout": secs}
      -> {"rc": int, "stdout": str, "stderr": str, "secs": float}
  {"op": "rapi", "client": {...}, "calls": [[name, args, kwargs], ...], "timeout": secs}
      -> the same shape; stdout holds the JSON list of outcomes (besides the client's
      methods: "wait_job" and "get_put", Ganeti's QA get/modify symmetry steps)
  {"op": "maxjob"} -> {"maxjob": int}   (highest job id the master lists)
"""

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path[:] = [p for p in sys.path if p and "site-packages" not in p]  # Debian's only
sys.path.insert(0, "/usr/share/ganeti/default")

TOOLS = ("cluster", "node", "group", "job", "debug", "filter", "os", "instance",
         "backup", "network", "storage")
MODULES = {}
for _tool in TOOLS:
    MODULES["gnt-" + _tool] = importlib.import_module("ganeti.client.gnt_" + _tool)
from ganeti import errors as gerrors  # noqa: E402  (after the sys.path change)
from ganeti import luxi  # noqa: E402
from ganeti.rapi import client as rapi_client  # noqa: E402

FINAL = ("success", "error", "canceled")


def _wait_job(rapi, job_id, timeout=60.0):
    """Follow a job with WaitForJobChange until it is finished; its status."""
    deadline = time.monotonic() + timeout
    prev, serial = None, None
    while time.monotonic() < deadline:
        result = rapi.WaitForJobChange(job_id, ["status"], prev, serial)
        if result is None:
            continue
        prev = result["job_info"]
        for entry in result["log_entries"]:
            serial = entry[0]
        if prev[0] in FINAL:
            return prev[0]
    raise AssertionError(f"job {job_id} did not finish in {timeout}s")


def _get_put(rapi, get_uri, modify_uri, opcode, method="PUT", aliases=(), exceptions=(),
             set_exceptions=()):
    """Ganeti's QA ``qa_rapi._DoGetPutTests``: read the object (a ``{}`` body, as the QA
    sends), send back every parameter of the modify opcode it answers; the job id."""
    from ganeti import opcodes
    interest = [p[0] for p in getattr(opcodes, opcode).OP_PARAMS] + list(aliases)
    info = rapi._SendRequest("GET", get_uri, None, {})
    missing = [p for p in interest if p not in info and p not in exceptions]
    if missing:
        raise AssertionError(f"{get_uri} does not answer {missing}")
    payload = {p: info[p] for p in interest
               if p not in exceptions and p not in set_exceptions}
    return rapi._SendRequest(method, modify_uri, None, payload)


def _resolve(value, results):
    """"$N" stands for the outcome of call N of the same request (a job id)."""
    if isinstance(value, str) and value.startswith("$") and value[1:].isdigit():
        return results[int(value[1:])]
    if isinstance(value, list):
        return [_resolve(v, results) for v in value]
    return value


def _rapi(opts, calls):
    kwargs = {"port": opts["port"]}
    if opts.get("user") is not None:
        kwargs.update(username=opts["user"], password=opts["password"])
    rapi = rapi_client.GanetiRapiClient(opts["host"], **kwargs)
    out, results = [], []
    for name, args, kw in calls:
        args = _resolve(args, results)
        try:
            if name == "wait_job":
                value = _wait_job(rapi, *args)
            elif name == "get_put":
                value = _get_put(rapi, *args, **kw)
            else:
                value = getattr(rapi, name)(*args, **kw)
            out.append({"ok": value})
            results.append(value)
        except rapi_client.GanetiApiError as err:
            out.append({"error": {"class": type(err).__name__, "code": err.code,
                                  "message": str(err)}})
            results.append(None)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def _child(request, out_path, err_path):
    """In the forked child: wire up fds, run the client, never return."""
    code = 1
    try:
        fd = os.open(os.devnull, os.O_RDONLY)
        if request.get("stdin") is not None:
            fd = os.open(request["stdin_path"], os.O_RDONLY)
        os.dup2(fd, 0)
        for path, target in ((out_path, 1), (err_path, 2)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, target)
        sys.stdin = open(0, closefd=False)
        signal.alarm(int(request.get("timeout", 120)))
        if request["op"] == "rapi":
            code = _rapi(request["client"], request["calls"])
        else:
            argv = request["argv"]
            sys.argv = ["/usr/sbin/" + argv[0]] + list(argv[1:])
            try:
                code = MODULES[argv[0]].Main()
            except SystemExit as exc:
                code = exc.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            sys.stderr.write(f"{code}\n")
            code = 1
    except BaseException:  # report like an uncaught exception of the real script
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def _run(request, tmp):
    start = time.monotonic()
    out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
    if request.get("stdin") is not None:
        request["stdin_path"] = os.path.join(tmp, "in")
        with open(request["stdin_path"], "w") as f:
            f.write(request["stdin"])
    argv = request.get("argv") or []
    if request["op"] == "run" and argv[0] not in MODULES:
        proc = subprocess.run(argv, input=request.get("stdin") or "", capture_output=True,
                              text=True, timeout=request.get("timeout", 120), check=False)
        return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
                "secs": time.monotonic() - start}
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(request, out_path, err_path)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    return {"rc": rc, "stdout": _read(out_path), "stderr": _read(err_path),
            "secs": time.monotonic() - start}


def _maxjob():
    client = luxi.Client()
    try:
        rows = client.QueryJobs(None, ["id"])
    finally:
        client.Close()
    return max([int(r[0]) for r in rows if r] or [0])


def main():
    tmp = tempfile.mkdtemp(prefix="oracle-fork-")
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["op"] == "maxjob":
                answer = {"maxjob": _maxjob()}
            elif request["op"] == "quit":
                break
            else:
                answer = _run(request, tmp)
        except (gerrors.GenericError, luxi.ProtocolError, OSError,
                subprocess.TimeoutExpired) as err:
            answer = {"error": f"{type(err).__name__}: {err}"}
        print(json.dumps(answer), flush=True)
    for name in os.listdir(tmp):
        os.unlink(os.path.join(tmp, name))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
