"""Privacy: the GDPR erasure of a person (`telha gdpr_erase`). Erasure reaches into every
app's rows (clarifications, deliveries and chat, documents and their stored files, facts,
jobs, audit events), so it lives in its own app at the top layer, beside the demo: it may
import every app and none imports it."""
