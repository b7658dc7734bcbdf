"""The email channel (CONTRACT §3.10): a person reached by email gets the question as a
message with an HTML and a plain-text part, sent through Django's email backend
(`EMAIL_URL`): the card's copy (`delivery.cards`, spec §7, quorum-aware), the passage only
when the card's gates let it cross, one link per candidate and one for "Something else…".

A link opens a confirmation page (`views.answer`): a `GET` never answers (mail scanners
open links); its button answers as the signed-in recipient with the card's nonce, through
the one tap pipeline (`delivery.actions`). Replies to the email are not read.

* `channel.EmailChannel` — the channel in the registry (`delivery.channels`);
* `render` — the messages (question, digest, steward escalation) and their links;
* `views` — the confirmation page and its refusals."""
