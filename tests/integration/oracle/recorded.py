# ruff: noqa: E501
"""Differences recorded from an oracle run (written by record.py; do not edit by hand).

Each entry: case id -> the exact difference text (``-`` ours, ``+`` real); the reason
for each is in ``expected.REASONS``.
"""

from __future__ import annotations

DIFFS: dict[str, str] = {
    'cluster-verify':
        'step 0 stdout:\n+<time>   - NOTICE: 1 non-redundant instance(s) found.',
    'cluster-verify-ignore-sysrq':
        'step 0 stdout:\n+<time>   - NOTICE: 1 non-redundant instance(s) found.',
    'cluster-repair-disk-sizes':
        'step 0 rc: ours 1, real 0\nstep 0 stderr:\n-Unhandled protocol error while talking to the master daemon:\n-Failed to parse request: SubmitJob: Unknown opcode OP_CLUSTER_REPAIR_DISK_SIZES',
    'cluster-master-failover-on-master':
        "step 0 stderr:\n-Master-failover with voting is only possible if the majority of nodes are still healthy; use the --no-voting option after ensuring by other means that you won't end up in a dual-master scenario. Unhealthy nodes: ['node1.example.com', 'node2.example.com', 'node3.example.com']\n+Failure: prerequisites not met for this operation:\n+error type: wrong_input, error details:\n+This commands must be run on the node where you want the new master to be. node1.example.com is already the master",
    'cluster-modify-ipolicy-disk-templates':
        'step 0 stdout:\n+<time>  - WARNING: After the ipolicy change the following instances violate them: inst12.example.com',
    'cluster-modify-disk-templates-unknown':
        'step 0 stderr:\n-Failed to parse request: SubmitJob: Can\'t parse value for \'enabled_disk_templates[0]\': expected a disk template: "blockdev", "diskless", "drbd", "ext", "file", "gluster", "plain", "rbd", "sharedfile", got "floppy"\n+Failed to parse request: SubmitJob: Can\'t parse value for \'enabled_disk_templates\': Invalid string value for type DiskTemplate: "floppy"',
    'cluster-modify-hypervisors-unknown':
        'step 0 stderr:\n-Failed to parse request: SubmitJob: Can\'t parse value for \'enabled_hypervisors[0]\': expected a hypervisor: "chroot", "fake", "kvm", "lxc", "xen-hvm", "xen-pvm", got "vmware"\n+Failed to parse request: SubmitJob: Can\'t parse value for \'enabled_hypervisors\': Invalid string value for type Hypervisor: "vmware"',
    'cluster-add-tags-bad':
        "step 0 stderr:\n-Tag contains invalid characters: 'has space'\n+Tag contains invalid characters",
    'cluster-add-tags-too-long':
        'step 0 stderr:\n-Tag too long (>128 characters): xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\n+Tag too long (>128 characters)',
    'node-list-filter-in':
        'step 0 stderr:\n-Failure: prerequisites not met for this operation:\n-error type: wrong_input, error details:\n-Invalid query filter: \'=[]\' needs a list field, \'name\' is of kind \'text\'\n+Unhandled Ganeti error: Cannot convert value \'"node1.example.com"\', error: Unable to read list',
    'node-list-filter-unknown-field':
        "step 0 stderr:\n-Failure: prerequisites not met for this operation:\n-error type: wrong_input, error details:\n-Invalid query filter: unknown field 'nope'\n+Failure: unknown/wrong parameter name 'Can't find field named 'nope''",
    'node-add-existing':
        "step 0 stderr:\n-Failure: prerequisites not met for this operation:\n-error type: resolver_error, error details:\n-The given name (node2.example.com) does not resolve: Name or service not known\n+Node node2.example.com already in the cluster (as node2.example.com) - please retry with '--readd'",
    'node-add-readd-master':
        'step 0 stderr:\n-Failure: prerequisites not met for this operation:\n-error type: resolver_error, error details:\n-The given name (node1.example.com) does not resolve: Name or service not known\n+Node node1.example.com is the master, cannot readd',
    'node-modify-demote-candidate':
        'step 0 stdout:\n+<time> Configuration data is not consistent: Not enough master candidates: actual 2, target 3',
    'node-modify-promote-candidate':
        'step 0 stdout:\n+<time> Configuration data is not consistent: Not enough master candidates: actual 2, target 3',
    'node-add-tags-bad':
        "step 0 stderr:\n-Tag contains invalid characters: 'a b'\n+Tag contains invalid characters",
    'group-evacuate-default':
        'step 0 stderr:\n-Unhandled protocol error while talking to the master daemon:\n-Failed to parse request: SubmitJob: Unknown opcode OP_GROUP_EVACUATE\n+Failure: command execution error:',
    'group-remove-default':
        "step 0 stderr:\n-Group 'default' not empty, has the following nodes: node1.example.com, node2.example.com, node3.example.com\n+Group 'default' not empty, has the following nodes: <uuid:1>, <uuid:2>, <uuid:3>",
    'group-add-with-params':
        'step 1 stdout:\n-      c-delay-target: default (1)\n-      c-fill-target: default (0)\n-      c-max-rate: default (61440)\n-      c-min-rate: default (4096)\n-      c-plan-ahead: default (20)\n-      data-stripes: default (1)\n-      disk-barriers: default (n)\n-      disk-custom: default ()\n-      dynamic-resync: default (False)\n-      meta-barriers: default (False)\n-      meta-stripes: default (1)\n-      metavg: default (xenvg)\n-      net-custom: default ()\n-      protocol: default (C)',
    'group-add-bad-policy':
        'step 0 stderr:\n-Failed to parse request: SubmitJob: Can\'t parse value for \'alloc_policy\': expected an allocation policy: "last_resort", "preferred", "unallocable", got "sometimes"\n+Failed to parse request: SubmitJob: Can\'t parse value for \'alloc_policy\': Invalid string value for type AllocPolicy: "sometimes"',
    'group-modify-diskparams':
        'step 1 stdout:\n-      c-delay-target: default (1)\n-      c-fill-target: default (0)\n-      c-max-rate: default (61440)\n-      c-min-rate: default (4096)\n-      c-plan-ahead: default (20)\n-      data-stripes: default (1)\n-      disk-barriers: default (n)\n-      disk-custom: default ()\n-      dynamic-resync: default (False)\n-      meta-barriers: default (False)\n-      meta-stripes: default (1)\n-      metavg: default (xenvg)\n-      net-custom: default ()\n-      protocol: default (C)',
    'group-modify-ipolicy-std':
        'step 1 stdout:\n-      c-delay-target: default (1)\n-      c-fill-target: default (0)\n-      c-max-rate: default (61440)\n-      c-min-rate: default (4096)\n-      c-plan-ahead: default (20)\n-      data-stripes: default (1)\n-      disk-barriers: default (n)\n-      disk-custom: default ()\n-      dynamic-resync: default (False)\n-      meta-barriers: default (False)\n-      meta-stripes: default (1)\n-      metavg: default (xenvg)\n-      net-custom: default ()\n-      protocol: default (C)',
    'group-modify-ipolicy-bounds':
        'step 1 stdout:\n-      c-delay-target: default (1)\n-      c-fill-target: default (0)\n-      c-max-rate: default (61440)\n-      c-min-rate: default (4096)\n-      c-plan-ahead: default (20)\n-      data-stripes: default (1)\n-      disk-barriers: default (n)\n-      disk-custom: default ()\n-      dynamic-resync: default (False)\n-      meta-barriers: default (False)\n-      meta-stripes: default (1)\n-      metavg: default (xenvg)\n-      net-custom: default ()\n-      protocol: default (C)',
    'group-modify-ipolicy-disk-templates':
        'step 1 stdout:\n-      c-delay-target: default (1)\n-      c-fill-target: default (0)\n-      c-max-rate: default (61440)\n-      c-min-rate: default (4096)\n-      c-plan-ahead: default (20)\n-      data-stripes: default (1)\n-      disk-barriers: default (n)\n-      disk-custom: default ()\n-      dynamic-resync: default (False)\n-      meta-barriers: default (False)\n-      meta-stripes: default (1)\n-      metavg: default (xenvg)\n-      net-custom: default ()\n-      protocol: default (C)',
    'group-remove-nonempty':
        "step 0 stderr:\n-Group 'rack5' not empty, has the following nodes: node2.example.com\n+Group 'rack5' not empty, has the following nodes: <uuid:1>",
    'job-autoarchive-all':
        'step 0 stdout:\n-Archived <masked> jobs, 0 unchecked left\n+Archived 0 jobs, 0 unchecked left',
    'debug-iallocator-allocate-in':
        'step 0 stderr:\n-Unhandled protocol error while talking to the master daemon:\n-Failed to parse request: SubmitJob: Unknown opcode OP_TEST_ALLOCATOR\n+Unhandled Ganeti error: Opcode result does not match String: b\'{"version": 2, "cluster_name": "cluster.example.com", "cluster_tags": [], "...',
    'filter-replace-rate-limit':
        'step 0 stderr:\n-Failure: prerequisites not met for this operation:\n-error type: wrong_input, error details:\n-Invalid filter rule: unknown action \'RATE_LIMIT,2\'; use one of ACCEPT, PAUSE, REJECT, CONTINUE or ["RATE_LIMIT", n] with n a positive integer\n+Unhandled protocol error while talking to the master daemon:\n+Failed to parse request: Cannot convert value \'["<uuid:1>", 0, [], "RATE_LIMIT,2", []]\', error: malformed FilterAction JSON: "RATE_LIMIT,2"',
    'filter-add-bad-action':
        'step 0 stderr:\n-Failure: prerequisites not met for this operation:\n-error type: wrong_input, error details:\n-Invalid filter rule: unknown action \'EXPLODE\'; use one of ACCEPT, PAUSE, REJECT, CONTINUE or ["RATE_LIMIT", n] with n a positive integer\n+Unhandled protocol error while talking to the master daemon:\n+Failed to parse request: Cannot convert value \'[null, 0, [], "EXPLODE", []]\', error: malformed FilterAction JSON: "EXPLODE"',
    'filter-add-bad-predicate-name':
        'step 0 stderr:\n-Failure: prerequisites not met for this operation:\n-error type: wrong_input, error details:\n-Invalid filter rule: unknown predicate \'planet\'; use one of jobid, opcode, reason\n+Unhandled protocol error while talking to the master daemon:\n+Failed to parse request: Cannot convert value \'[null, 0, [["planet", ["=", "name", "mars"]]], "CONTINUE", []]\', error: malformed FilterPredicate: bad parameter list for \'planet\' predicate: [["=","name","mars"]]',
    'filter-add-negative-priority':
        'step 0 stderr:\n-Failure: prerequisites not met for this operation:\n-error type: wrong_input, error details:\n-Invalid filter rule: the priority must be a non-negative integer, got -1\n+Unhandled protocol error while talking to the master daemon:\n+Failed to parse request: Cannot convert value \'[null, -1, [], "CONTINUE", []]\', error: Invalid value for non-negative type \'-1\'',
    'rapi-features':
        'step 0 stdout:\n+   "node-evac-res1"\n+   "node-migrate-reqv1"',
    'rapi-info':
        'step 0 stdout:\n+     "cdrom2_image_path": "",\n+     "cdrom_disk_type": "",\n+     "disk_aio": "threads",\n+     "disk_discard": "default",\n+     "floppy_image_path": "",\n-     "kernel_path": "",\n+     "kernel_path": "/boot/vmlinuz-3-kvmU",\n+     "kvm_path": "/usr/bin/kvm",\n+     "kvm_pci_reservations": 12,\n+     "migration_caps": "",\n+     "scsi_controller_type": "lsi",\n+     "soundhw": "",\n+     "spice_bind": "",\n+     "spice_image_compression": "",\n+     "spice_ip_version": 0,\n+     "spice_jpeg_wan_compression": "",\n+     "spice_password_file": "",\n+     "spice_playback_compression": true,\n+     "spice_streaming_video": "",\n+     "spice_tls_ciphers": "HIGH:-DES:-3DES:-EXPORT:-DH",\n+     "spice_use_tls": false,\n+     "spice_use_vdagent": true,\n+     "spice_zlib_glz_wan_compression": "",\n+     "usb_devices": "",\n+     "use_chroot": false,\n+     "use_guest_agent": false,\n+     "vga": "",\n+     "vhost_net": false,\n+     "virtio_net_queues": 1,\n-     "vnc_tls": false\n+     "vnc_tls": false,\n+     "vnc_x509_path": "",\n+     "vnc_x509_verify": false,\n+     "vnet_hdr": true',
    'rapi-info-reason':
        'step 0 stdout:\n+     "cdrom2_image_path": "",\n+     "cdrom_disk_type": "",\n+     "disk_aio": "threads",\n+     "disk_discard": "default",\n+     "floppy_image_path": "",\n-     "kernel_path": "",\n+     "kernel_path": "/boot/vmlinuz-3-kvmU",\n+     "kvm_path": "/usr/bin/kvm",\n+     "kvm_pci_reservations": 12,\n+     "migration_caps": "",\n+     "scsi_controller_type": "lsi",\n+     "soundhw": "",\n+     "spice_bind": "",\n+     "spice_image_compression": "",\n+     "spice_ip_version": 0,\n+     "spice_jpeg_wan_compression": "",\n+     "spice_password_file": "",\n+     "spice_playback_compression": true,\n+     "spice_streaming_video": "",\n+     "spice_tls_ciphers": "HIGH:-DES:-3DES:-EXPORT:-DH",\n+     "spice_use_tls": false,\n+     "spice_use_vdagent": true,\n+     "spice_zlib_glz_wan_compression": "",\n+     "usb_devices": "",\n+     "use_chroot": false,\n+     "use_guest_agent": false,\n+     "vga": "",\n+     "vhost_net": false,\n+     "virtio_net_queues": 1,\n-     "vnc_tls": false\n+     "vnc_tls": false,\n+     "vnc_x509_path": "",\n+     "vnc_x509_verify": false,\n+     "vnet_hdr": true',
    'rapi-node-role-unknown':
        'step 0 stdout:\n-   "code": 404,\n-   "message": "404 Not Found: Nothing matches the given URI"\n+   "code": 500,\n+   "message": "500 list index out of range: Server got itself in trouble"',
    'rapi-groups-bulk':
        'step 0 stdout:\n-    "ctime": <time>,\n+    "ctime": 0,\n-     "drbd": {\n-      "c-delay-target": 1,\n-      "c-fill-target": 0,\n-      "c-max-rate": 61440,\n-      "c-min-rate": 4096,\n-      "c-plan-ahead": 20,\n-      "data-stripes": 1,\n-      "disk-barriers": "n",\n-      "disk-custom": "",\n-      "dynamic-resync": false,\n-      "meta-barriers": false,\n-      "meta-stripes": 1,\n-      "metavg": "xenvg",\n-      "net-custom": "",\n-      "protocol": "C",\n-      "resync-rate": 61440\n-     },\n+     "drbd": {},',
    'rapi-group':
        'step 0 stdout:\n-   "ctime": <time>,\n+   "ctime": 0,\n-    "drbd": {\n-     "c-delay-target": 1,\n-     "c-fill-target": 0,\n-     "c-max-rate": 61440,\n-     "c-min-rate": 4096,\n-     "c-plan-ahead": 20,\n-     "data-stripes": 1,\n-     "disk-barriers": "n",\n-     "disk-custom": "",\n-     "dynamic-resync": false,\n-     "meta-barriers": false,\n-     "meta-stripes": 1,\n-     "metavg": "xenvg",\n-     "net-custom": "",\n-     "protocol": "C",\n-     "resync-rate": 61440\n-    },\n+    "drbd": {},',
    'rapi-filter-unknown':
        'step 0 stdout:\n-   "message": "404 Filter rule with UUID <uuid:1> does not exist: Nothing matches the given URI"\n+   "message": "404 Not Found: Nothing matches the given URI"',
    'rapi-query-cluster':
        'step 0 stdout:\n-   "code": 404,\n-   "message": "404 Unknown query resource &#x27;cluster&#x27; (queryable: export, filter, group, instance, job, lock, network, node, os): Nothing matches the given URI"\n+   "code": 500,\n+   "message": "500 Query &#x27;ItemTypeOpCode QRCluster&#x27; not supported: Server got itself in trouble"',
    'rapi-query-os':
        'step 0 stdout:\n-  "ok": {\n-   "data": [\n-    [\n-     [\n-      0,\n-      "noop"\n-     ]\n-    ]\n-   ],\n-   "fields": [\n-    {\n-     "doc": "Operating system name",\n-     "kind": "text",\n-     "name": "name",\n-     "title": "Name"\n-    }\n-   ]\n+  "error": {\n+   "class": "GanetiApiError",\n+   "code": 500,\n+   "message": "500 Query &#x27;ItemTypeOpCode QROs&#x27; not supported: Server got itself in trouble"',
    'rapi-query-node-bad-filter':
        'step 0 stdout:\n-   "code": 400,\n-   "message": "400 Invalid query filter: unknown operator &#x27;~~&#x27; in [&#x27;~~&#x27;, &#x27;x&#x27;] (wrong_input): Bad request syntax or unsupported method"\n+   "code": 502,\n+   "message": "502 Failed to parse request: Cannot convert value &#x27;[&quot;node&quot;, [&quot;name&quot;], [&quot;~~&quot;, &quot;x&quot;]]&#x27;, error: Unknown filter operand &#x27;~~&#x27;: Invalid responses from another server/proxy"',
    'rapi-query-unknown-resource':
        'step 0 stdout:\n-   "code": 404,\n-   "message": "404 Unknown query resource &#x27;planet&#x27; (queryable: export, filter, group, instance, job, lock, network, node, os): Nothing matches the given URI"\n+   "code": 502,\n+   "message": "502 Failed to parse request: Cannot convert value &#x27;[&quot;planet&quot;, [&quot;name&quot;], null]&#x27;, error: Can&#x27;t parse value &#x27;planet&#x27; as neitherQueryTypeLuxi nor QueryTypeOp: Invalid responses from another server/proxy"',
    'rapi-instance-console':
        'step 0 stdout:\n-   "code": 404,\n-   "message": "404 Instance name nope.example.com not found: Nothing matches the given URI"\n+   "code": 500,\n+   "message": "500 list index out of range: Server got itself in trouble"',
    'rapi-instance-tags':
        'step 0 stdout:\n-   "code": 404,\n-   "message": "404 Instance name nope.example.com not found: Nothing matches the given URI"\n+   "code": 500,\n+   "message": "500 (&#x27;Instance name nope.example.com not found&#x27;, &#x27;unknown_entity&#x27;): Server got itself in trouble"',
    'rapi-modify-cluster-bad-param':
        'step 0 stdout:\n-   "message": "400 Invalid body parameters: Opcode OP_CLUSTER_SET_PARAMS has no parameter(s) &#x27;no_such_param&#x27;: Bad request syntax or unsupported method"\n+   "message": "400 Invalid body parameters: Object OpClusterSetParams doesn&#x27;t support the parameter &#x27;no_such_param&#x27;: Bad request syntax or unsupported method"',
    'rapi-modify-cluster-bad-type':
        'step 0 stdout:\n-   "message": "400 Invalid body parameters: Parameter &#x27;OP_CLUSTER_SET_PARAMS.candidate_pool_size&#x27; fails validation: expected an integer &gt;= 1, got &quot;many&quot;: Bad request syntax or unsupported method"\n+   "message": "400 Invalid body parameters: (&quot;Parameter &#x27;OP_CLUSTER_SET_PARAMS.candidate_pool_size&#x27; fails validation&quot;, &#x27;wrong_input&#x27;): Bad request syntax or unsupported method"',
    'rapi-set-node-role-master':
        'step 0 stdout:\n-   "message": "400 Can&#x27;t set &#x27;master&#x27; role (possible: drained, master-candidate, offline, regular): Bad request syntax or unsupported method"\n+   "message": "400 Can&#x27;t set &#x27;master&#x27; role: Bad request syntax or unsupported method"',
    'rapi-set-node-role-bad':
        'step 0 stdout:\n-   "message": "400 Can&#x27;t set &#x27;boss&#x27; role (possible: drained, master-candidate, offline, regular): Bad request syntax or unsupported method"\n+   "message": "400 Can&#x27;t set &#x27;boss&#x27; role: Bad request syntax or unsupported method"',
    'rapi-evacuate-node':
        'step 0 stdout:\n-  "error": {\n-   "class": "GanetiApiError",\n-   "code": null,\n-   "message": "Server is version 2.4 or earlier and caller does not accept old-style results (parameter accept_old)"\n-  }\n+  "ok": 201\n-  "error": {\n-   "class": "GanetiApiError",\n-   "code": 404,\n-   "message": "404 Not Found: Nothing matches the given URI"\n-  }\n+  "ok": "success"',
    'rapi-migrate-node':
        'step 0 stdout:\n-  "error": {\n-   "class": "GanetiApiError",\n-   "code": 404,\n-   "message": "404 Not Found: Nothing matches the given URI"\n-  }\n+  "ok": 202\n-  "error": {\n-   "class": "GanetiApiError",\n-   "code": 404,\n-   "message": "404 Not Found: Nothing matches the given URI"\n-  }\n+  "ok": "success"',
    'rapi-modify-group':
        'step 0 stdout:\n-     "c-delay-target": 1,\n-     "c-fill-target": 0,\n-     "c-max-rate": 61440,\n-     "c-min-rate": 4096,\n-     "c-plan-ahead": 20,\n-     "data-stripes": 1,\n-     "disk-barriers": "n",\n-     "disk-custom": "",\n-     "dynamic-resync": false,\n-     "meta-barriers": false,\n-     "meta-stripes": 1,\n-     "metavg": "xenvg",\n-     "net-custom": "",\n-     "protocol": "C",',
    'rapi-assign-group-nodes':
        'step 0 stdout:\n-     "c-delay-target": 1,\n-     "c-fill-target": 0,\n-     "c-max-rate": 61440,\n-     "c-min-rate": 4096,\n-     "c-plan-ahead": 20,\n-     "data-stripes": 1,\n-     "disk-barriers": "n",\n-     "disk-custom": "",\n-     "dynamic-resync": false,\n-     "meta-barriers": false,\n-     "meta-stripes": 1,\n-     "metavg": "xenvg",\n-     "net-custom": "",\n-     "protocol": "C",',
    'rapi-assign-group-nodes-back':
        'step 0 stdout:\n-     "c-delay-target": 1,\n-     "c-fill-target": 0,\n-     "c-max-rate": 61440,\n-     "c-min-rate": 4096,\n-     "c-plan-ahead": 20,\n-     "data-stripes": 1,\n-     "disk-barriers": "n",\n-     "disk-custom": "",\n-     "dynamic-resync": false,\n-     "meta-barriers": false,\n-     "meta-stripes": 1,\n-     "metavg": "xenvg",\n-     "net-custom": "",\n-     "protocol": "C",',
    'rapi-add-filter-bad-action':
        'step 0 stdout:\n-   "code": 400,\n-   "message": "400 Invalid filter rule: unknown action &#x27;EXPLODE&#x27;; use one of ACCEPT, PAUSE, REJECT, CONTINUE or [&quot;RATE_LIMIT&quot;, n] with n a positive integer (wrong_input): Bad request syntax or unsupported method"\n+   "code": 502,\n+   "message": "502 Failed to parse request: Cannot convert value &#x27;[null, 0, [], &quot;EXPLODE&quot;, [[&quot;gnt:client&quot;, &quot;&quot;, <time>]]]&#x27;, error: malformed FilterAction JSON: &quot;EXPLODE&quot;: Invalid responses from another server/proxy"',
}
