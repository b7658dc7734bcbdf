"""The graph's seams to the layers above it (the graph never imports them).

`source_changed`: a steward changed a source's restriction or ACL; sent with `tenant=`,
`type=` (the audit event type) and `detail=`, in the change's transaction. Clarify, which
keeps the audit log, connects `audit_event_append` in its `AppConfig.ready`.
"""

from django.dispatch import Signal

source_changed = Signal()
