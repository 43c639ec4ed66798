"""The table of implemented node calls: call name -> handler."""

from __future__ import annotations

from ganeti.noded.backend import (
    cluster,
    configstore,
    delay,
    files,
    hooks,
    info,
    instances,
    jobqueue,
    oob,
    roles,
    ssconf,
    verify,
    watcher,
)
from ganeti.noded.backend.context import Handler


def handlers() -> dict[str, Handler]:
    """Every implemented call, by name."""
    return {
        "version": info.version,
        "node_info": info.node_info,
        "node_verify": verify.node_verify,
        "node_leave_cluster": cluster.node_leave_cluster,
        "upload_file": files.upload_file,
        "config_update": configstore.config_update,
        "write_ssconf_files": ssconf.write_ssconf_files,
        "jobqueue_update": jobqueue.update,
        "jobqueue_rename": jobqueue.rename,
        "jobqueue_update_many": jobqueue.update_many,
        "jobqueue_purge": jobqueue.purge,
        "test_delay": delay.test_delay,
        "set_watcher_pause": watcher.set_watcher_pause,
        "run_oob": oob.run_oob,
        "node_demote_from_mc": roles.node_demote_from_mc,
        "hooks_runner": hooks.hooks_runner,
        "instance_info": instances.instance_info,
        "all_instances_info": instances.all_instances_info,
        "instance_list": instances.instance_list,
        "instance_start": instances.instance_start,
        "instance_shutdown": instances.instance_shutdown,
        "instance_reboot": instances.instance_reboot,
        "instance_balloon_memory": instances.instance_balloon_memory,
    }
