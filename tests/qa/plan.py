"""Which of Ganeti's QA tests the runner knows, in ganeti-qa.py's order, and which
it runs by default (those that touch issue 34's items).

Each entry is one call of one QA test function, as ganeti-qa.py makes it:
``Entry(id, config_name, "module.Function", args, state)``.

- ``config_name`` is the name in the QA config's ``tests`` section that enables the
  call in ganeti-qa.py; ``--tests`` selects by it, by the function name or by the id.
- ``args`` names what the call gets, resolved by the driver: ``inst`` (the block's
  instance), ``inst_name``, ``other_name`` (a second instance name), ``pnode`` (a node
  that is not the master), ``inodes`` (the instance's nodes), ``othernode`` (a node
  that is not the instance's), ``othernodes``, ``rapi_getos``, ``default_group``,
  ``export_name`` (what the block's export returned), ``newinst`` (a second QA
  instance, for the import).
- ``state`` is the instance's state the test expects before it runs (``up``,
  ``down``, or None); the driver brings the instance there first, as the test
  before it would have left it in ganeti-qa.py.

Instance blocks are the same list for each disk template: the block starts with
``instance-add-<template>`` (the instance's creation, itself a test) and ends with
its removal; when the creation fails, the block's other tests are "not run".

Plain data only: this module imports nothing, so the runner can list it anywhere.
"""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    """One call of one QA test function."""

    id: str
    config_name: str
    function: str
    args: tuple[str, ...] = ()
    state: str | None = None


def _e(config_name: str, function: str, args: tuple[str, ...] = (),
       state: str | None = None, suffix: str = "") -> Entry:
    name = function.split(".")[-1] + suffix
    return Entry(name, config_name, function, args, state)


#: Tests on the cluster without instances (ganeti-qa.py: SetupCluster,
#: RunClusterTests, RunOsTests, tags, RunCommonNodeTests, groups, node tests).
CLUSTER = [
    _e("env", "qa_env.TestGanetiCommands"),
    _e("job-list", "qa_job.TestJobList"),
    _e("test-jobqueue", "qa_cluster.TestJobqueue"),
    _e("test-jobqueue", "qa_job.TestJobCancellation"),
    _e("node-list", "qa_node.TestNodeList"),
    _e("node-list", "qa_node.TestNodeListFields"),
    _e("instance-list", "qa_instance.TestInstanceListFields"),
    _e("job-list", "qa_job.TestJobListFields"),
    _e("instance-export", "qa_instance.TestBackupListFields"),
    _e("node-info", "qa_node.TestNodeInfo"),
    _e("cluster-verify", "qa_cluster.TestClusterVerify"),
    _e("cluster-modify", "qa_cluster.TestClusterModifyEmpty"),
    _e("cluster-modify", "qa_cluster.TestClusterModifyIPolicy"),
    _e("cluster-modify", "qa_cluster.TestClusterModifyISpecs"),
    _e("cluster-modify", "qa_cluster.TestClusterModifyBe"),
    _e("cluster-modify", "qa_cluster.TestClusterModifyDisk"),
    _e("cluster-modify", "qa_cluster.TestClusterModifyDiskTemplates"),
    _e("cluster-modify", "qa_cluster.TestClusterModifyFileStorageDir"),
    _e("cluster-modify", "qa_cluster.TestClusterModifySharedFileStorageDir"),
    _e("cluster-info", "qa_cluster.TestClusterVersion"),
    _e("cluster-info", "qa_cluster.TestClusterInfo"),
    _e("cluster-info", "qa_cluster.TestClusterGetmaster"),
    _e("rapi", "qa_rapi.TestVersion"),
    _e("rapi", "qa_rapi.TestEmptyCluster"),
    _e("rapi", "qa_rapi.TestRapiQuery"),
    _e("os", "qa_os.TestOsList"),
    _e("os", "qa_os.TestOsDiagnose"),
    _e("os", "qa_os.TestOsValid", ("rapi_getos",)),
    _e("os", "qa_os.TestOsInvalid", ("rapi_getos",)),
    _e("os", "qa_os.TestOsPartiallyValid", ("rapi_getos",)),
    _e("os", "qa_os.TestOsModifyValid"),
    _e("os", "qa_os.TestOsModifyInvalid"),
    _e("os", "qa_os.TestOsStatesNonExisting"),
    _e("tags", "qa_tags.TestClusterTags"),
    _e("node-storage", "qa_node.TestNodeStorage"),
    _e("group-list", "qa_group.TestGroupList"),
    _e("group-list", "qa_group.TestGroupListFields"),
    _e("group-rwops", "qa_group.TestGroupAddRemoveRename"),
    _e("group-rwops", "qa_group.TestGroupAddWithOptions"),
    _e("group-rwops", "qa_group.TestGroupModify"),
    _e("group-rwops", "qa_rapi.TestRapiNodeGroups"),
    _e("group-rwops", "qa_tags.TestGroupTags", ("default_group",)),
    _e("node-readd", "qa_node.TestNodeReadd", ("pnode",)),
    _e("node-modify", "qa_node.TestNodeModify", ("pnode",)),
    _e("tags", "qa_tags.TestNodeTags", ("pnode",)),
    _e("rapi", "qa_rapi.TestNode", ("pnode",)),
]

#: The tests of one instance, between its creation and its removal (ganeti-qa.py:
#: RunInstanceTests, RunCommonInstanceTests, RunExportImportTests,
#: RunHardwareFailureTests), for the items issue 34 touches and what they need.
INSTANCE = [
    _e("instance-modify-disks", "qa_instance.TestInstanceModifyDisks", ("inst",), "up"),
    _e("instance-shutdown", "qa_instance.TestInstanceShutdown", ("inst",), "up"),
    _e("instance-modify", "qa_instance.TestInstanceStoppedModify", ("inst",), "down"),
    _e("instance-shutdown", "qa_instance.TestInstanceStartup", ("inst",), "down"),
    _e("rapi", "qa_rapi.TestRapiInstanceShutdown", ("inst",), "up"),
    _e("rapi", "qa_rapi.TestRapiInstanceStartup", ("inst",), "down"),
    _e("instance-list", "qa_instance.TestInstanceList"),
    _e("instance-info", "qa_instance.TestInstanceInfo", ("inst",)),
    _e("instance-modify", "qa_instance.TestInstanceModify", ("inst",), "up"),
    _e("instance-modify", "qa_rapi.TestRapiInstanceModify", ("inst",), "up"),
    _e("instance-device-names", "qa_instance.TestInstanceDeviceNames", ("inst",), "up"),
    _e("instance-reinstall", "qa_instance.TestInstanceReinstall", ("inst",), "down"),
    _e("instance-reinstall", "qa_rapi.TestRapiInstanceReinstall", ("inst",), "down"),
    _e("instance-rename", "qa_instance.TestInstanceRenameAndBack",
       ("inst_name", "inst_name"), "down", "(same)"),
    _e("instance-rename", "qa_rapi.TestRapiInstanceRenameAndBack",
       ("inst_name", "inst_name"), "down", "(same)"),
    _e("instance-rename", "qa_instance.TestInstanceRenameAndBack",
       ("inst_name", "other_name"), "down", "(other)"),
    _e("instance-rename", "qa_rapi.TestRapiInstanceRenameAndBack",
       ("inst_name", "other_name"), "down", "(other)"),
    _e("instance-grow-disk", "qa_instance.TestInstanceGrowDisk", ("inst",), "down"),
    _e("instance-reboot", "qa_instance.TestInstanceReboot", ("inst",), "up"),
    _e("tags", "qa_tags.TestInstanceTags", ("inst",)),
    _e("cluster-verify", "qa_cluster.TestClusterVerify", (), None, "(with instance)"),
    _e("rapi", "qa_rapi.TestInstance", ("inst",), "up"),
    _e("instance-modify-primary", "qa_instance.TestInstanceModifyPrimaryAndBack",
       ("inst", "pnode_of_inst", "othernode"), "up"),
    _e("instance-export", "qa_instance.TestInstanceExportNoTarget", ("inst",), "up"),
    _e("instance-export", "qa_instance.TestInstanceExport", ("inst", "othernode"), "up"),
    _e("instance-export", "qa_instance.TestBackupList", ("othernode",)),
    _e("instance-import", "qa_instance.TestInstanceImport",
       ("newinst", "pnode_of_inst", "othernode", "export_name")),
    _e("instance-recreate-disks", "qa_instance.TestRecreateDisks",
       ("inst", "inodes", "othernodes"), "up"),
]

#: Disk templates of the instance blocks: (config name, template, QA's creation
#: function).
TEMPLATES = [
    ("instance-add-file", "file", "qa_instance.TestInstanceAddFile"),
    ("instance-add-shared-file", "sharedfile", "qa_instance.TestInstanceAddSharedFile"),
    ("instance-add-diskless", "diskless", "qa_instance.TestInstanceAddDiskless"),
]

#: After the instance blocks (ganeti-qa.py: RunQa's end).
LATE = [
    _e("instance-add-osparams", "qa_instance.TestInstanceAddOsParams"),
    _e("instance-add-osparams", "qa_instance.TestSecretOsParams"),
]

#: The default selection: every config name above.  (All of them touch an item of
#: issue 34 or set up what such a test needs; the rest of Ganeti's QA, e.g.
#: failover, migration, burnin, master failover, is for later issues.)
DEFAULT = sorted({e.config_name for e in CLUSTER + INSTANCE + LATE} |
                 {t[0] for t in TEMPLATES})


def all_ids() -> list[str]:
    """Every test id, as the summary names them (instance tests per template)."""
    ids = [e.id for e in CLUSTER]
    for _, template, create in TEMPLATES:
        ids.append(f"{template}/{create.split('.')[-1]}")
        ids += [f"{template}/{e.id}" for e in INSTANCE]
        ids.append(f"{template}/TestInstanceRemove")
    return ids + [e.id for e in LATE]
