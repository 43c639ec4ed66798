"""A fake ``lvm`` program for tests: a script on PATH that records its argv and
answers like lvm (JSON reports), keeping its volume groups in a JSON state file.

    fake = FakeLvm.install(testcase, vgs={"xenvg": {"size": 1024, "pvs": ["/dev/sdb"]}})
    ... code that runs ``lvm`` ...
    fake.calls      # [["lvcreate", ...], ...]
    fake.state      # {"vgs": {...}, "lvs": {"xenvg/lv": {...}}, "pvs": {...}}
"""

import json
import os
import sys

_SCRIPT = r'''
import json, os, sys
state_file = os.environ["FAKE_LVM_STATE"]
with open(state_file) as f:
    state = json.load(f)
argv = sys.argv[1:]
with open(state_file + ".calls", "a") as f:
    f.write(json.dumps(argv) + "\n")
fail = state.get("fail", {}).get(argv[0])
if fail:
    sys.stderr.write(fail + "\n")
    sys.exit(5)
cmd, args = argv[0], argv[1:]
opts, pos = {}, []
i = 0
while i < len(args):
    a = args[i]
    if a in ("-o", "--reportformat", "--units", "--driverloaded", "--allocatable", "-L",
             "--addtag", "--separator", "--options"):
        opts[a] = args[i + 1]; i += 2; continue
    if a.startswith("-L") and len(a) > 2: opts["-L"] = a[2:]
    elif a.startswith("-n") and len(a) > 2: opts["-n"] = a[2:]
    elif a.startswith("-i") and len(a) > 2: opts["-i"] = a[2:]
    elif a.startswith("-"): opts[a] = True
    else: pos.append(a)
    i += 1

def save():
    with open(state_file, "w") as f:
        json.dump(state, f)

def num(v): return "%.2f" % v

def vg_used(vg):
    return sum(lv["size"] for k, lv in state["lvs"].items() if k.split("/")[0] == vg)

def report(kind, rows):
    fields = opts["-o"].split(",")
    out = [{k: r.get(k, "") for k in fields} for r in rows]
    print(json.dumps({"report": [{kind: out}]}))

def size_arg(text, base=0.0):
    text = text.rstrip("mM")
    if text.startswith("+"): return base + float(text[1:])
    return float(text)

if cmd == "pvs":
    rows = []
    for name, pv in state["pvs"].items():
        used = vg_used(pv["vg"]) if pv["vg"] else 0
        rows.append({"pv_name": name, "vg_name": pv["vg"], "pv_size": num(pv["size"]),
                     "pv_used": num(used), "pv_free": num(pv["size"] - used),
                     "pv_attr": ("a" if pv.get("allocatable", True) else "-") + "--"})
    rows = [r for r in rows if not pos or r["pv_name"] in pos]
    report("pv", rows)
elif cmd == "vgs":
    if "--noheadings" in opts:
        sys.exit(0 if all(p in state["vgs"] for p in pos) else 5)
    rows = []
    for name, vg in state["vgs"].items():
        rows.append({"vg_name": name, "vg_size": num(vg["size"]),
                     "vg_free": num(vg["size"] - vg_used(name)), "vg_attr": "wz--n-"})
    rows = [r for r in rows if not pos or r["vg_name"] in pos]
    report("vg", rows)
elif cmd == "lvs":
    rows = []
    for key, lv in sorted(state["lvs"].items()):
        vg, name = key.split("/")
        if pos and key not in pos and vg not in pos:
            continue
        rows.append({"vg_name": vg, "lv_name": name, "lv_size": num(lv["size"]),
                     "lv_attr": lv.get("attr", "-wi-------"), "lv_kernel_major": "-1",
                     "lv_kernel_minor": "-1",
                     "devices": ",".join(p + "(0)" for p in state["vgs"][vg]["pvs"])})
    for p in pos:
        if "/" in p and p not in state["lvs"]:
            sys.stderr.write("  Failed to find logical volume \"%s\"\n" % p)
            sys.exit(5)
    report("lv", rows)
elif cmd == "lvcreate":
    vg = pos[0]
    key = vg + "/" + opts["-n"]
    if key in state["lvs"]:
        sys.stderr.write("Logical volume already exists\n"); sys.exit(5)
    state["lvs"][key] = {"size": size_arg(opts["-L"]), "tags": [opts.get("--addtag")]}
    save()
elif cmd == "lvremove":
    if pos[0] not in state["lvs"]:
        sys.stderr.write("Failed to find logical volume\n"); sys.exit(5)
    del state["lvs"][pos[0]]; save()
elif cmd == "lvrename":
    vg, old, new = pos
    state["lvs"][vg + "/" + new] = state["lvs"].pop(vg + "/" + old); save()
elif cmd == "lvextend":
    lv = state["lvs"][pos[0]]
    if "--test" not in opts:
        lv["size"] = size_arg(opts["-L"], lv["size"]); save()
elif cmd == "lvchange":
    pass
elif cmd == "pvchange":
    state["pvs"][pos[0]]["allocatable"] = opts["--allocatable"] == "y"; save()
elif cmd == "vgreduce":
    print("  Wrote out consistent volume group %s" % pos[-1])
else:
    sys.stderr.write("fake lvm: unknown command %s\n" % cmd); sys.exit(3)
'''


class FakeLvm:
    """The fake program and its state (see the module docstring)."""

    def __init__(self, directory):
        self.directory = directory
        self.state_file = os.path.join(directory, "state.json")

    @classmethod
    def create(cls, directory, vgs=None):
        """Write the program into ``directory`` (which must exist) and start with
        ``vgs``: {name: {"size": MiB, "pvs": [paths]}}; see :meth:`env`."""
        fake = cls(directory)
        script = os.path.join(directory, "lvm")
        with open(script, "w") as f:
            f.write(f"#!{sys.executable}\n{_SCRIPT}")
        os.chmod(script, 0o755)
        vgs = vgs if vgs is not None else {"xenvg": {"size": 1024, "pvs": ["/dev/sdb"]}}
        pvs = {}
        for name, vg in vgs.items():
            for pv in vg["pvs"]:
                pvs[pv] = {"vg": name, "size": vg["size"] / len(vg["pvs"])}
        fake.state = {"vgs": vgs, "pvs": pvs, "lvs": {}}
        return fake

    def env(self, base=None):
        """An environment (``base``, default os.environ) whose ``lvm`` is this one."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = self.directory + os.pathsep + env.get("PATH", "")
        env["FAKE_LVM_STATE"] = self.state_file
        return env

    @classmethod
    def install(cls, testcase, vgs=None):
        """:meth:`create` in a temporary directory of ``testcase`` and put the program
        first on PATH for the test (os.environ is patched)."""
        directory = os.path.abspath(testcase.mktemp())
        os.makedirs(directory)
        fake = cls.create(directory, vgs)
        testcase.patch(os, "environ", fake.env())
        return fake

    @property
    def state(self):
        with open(self.state_file) as f:
            return json.load(f)

    @state.setter
    def state(self, value):
        with open(self.state_file, "w") as f:
            json.dump(value, f)

    def fail(self, command, message):
        """Make ``command`` fail with ``message``."""
        state = self.state
        state.setdefault("fail", {})[command] = message
        self.state = state

    @property
    def calls(self):
        try:
            with open(self.state_file + ".calls") as f:
                return [json.loads(line) for line in f]
        except FileNotFoundError:
            return []


def enable_lvm(master, templates=("plain",), vg="xenvg"):
    """Give an InProcessMaster's cluster a volume group and enable ``templates``
    (OP_CLUSTER_SET_PARAMS does not take vg_name yet)."""
    def change(cfg):
        cfg.cluster.volume_group_name = vg
        cfg.cluster.enabled_disk_templates = list(templates)
    failure = master.run_until(master.daemon.config_writer.update(change))
    if failure is not None:
        failure.raiseException()
