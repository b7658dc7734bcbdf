"""Detection rules for email (.eml): envelope-date integrity only.

* `rule_missing_date` — no Date header → `undated`, the Received times as candidates.
* `rule_unparseable_date` — a Date header that does not parse → `low_confidence_extraction`.
* `rule_date_received_mismatch` — Date and the first Received hop disagree by more than
  `TOLERANCE` → `conflicting_dates` ("12 June (sent)" vs "13 June (received)").
From → SENT_BY, To → TO, Cc → CC.
"""

from datetime import UTC, datetime, timedelta
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import getaddresses

from ingest.formats.base import Mail, header_time, received_from_headers

from .model import Candidate, Detection, Fact, Finding, PersonRef, label_with_year

TOLERANCE = timedelta(hours=24)


def received_times(message: EmailMessage) -> list[datetime]:
    """Times of the message's Received hops, oldest first."""
    return received_from_headers(list(message.get_all("Received", []) or []))


def _candidate(d: datetime, role: str, span: tuple[int, int] | None) -> Candidate:
    """ "14 July 2026 (received)": the UTC day of a header time, labelled with its role."""
    day = d.astimezone(UTC).date()
    return Candidate(f"{label_with_year(day)} ({role})", day, None, span)


def rule_missing_date(
    raw: str | None, received: list[datetime], span: tuple[int, int] | None = None
) -> Finding | None:
    """No Date header → `undated`, the first Received hop's time as the candidate (a
    relay stamps it when the message arrives, so it is a good guess). No Received
    header either: nothing to offer, no finding."""
    if raw or not received:
        return None
    return Finding(
        rule="missing_date",
        node_key="message",
        kind="undated",
        candidates=[_candidate(received[0], "received", span)],
        detector_confidence=0.9,
        applied_candidate_confidence=0.6,
        span=span,
    )


def rule_unparseable_date(
    raw: str | None, sent: datetime | None, received: list[datetime], span: tuple[int, int] | None
) -> Finding | None:
    """A Date header that does not parse → `low_confidence_extraction`, the first
    Received time as the candidate (else the unreadable value itself)."""
    if not raw or sent is not None:
        return None
    candidates = (
        [_candidate(received[0], "received", span)]
        if received
        else [Candidate(f"unreadable Date header: {raw[:60]!r}", None, None, span)]
    )
    return Finding(
        rule="unparseable_date",
        node_key="message",
        kind="low_confidence_extraction",
        candidates=candidates,
        detector_confidence=0.85,
        applied_candidate_confidence=0.4,
        span=span,
    )


def rule_date_received_mismatch(
    sent: datetime | None, received: list[datetime], span: tuple[int, int] | None
) -> Finding | None:
    """Date and the first Received hop more than `TOLERANCE` apart → `conflicting_dates`:
    "9 July 2026 (sent)" vs "14 July 2026 (received)", the sender's Date first."""
    if sent is None or not received or abs(received[0] - sent) <= TOLERANCE:
        return None
    return Finding(
        rule="date_received_mismatch",
        node_key="message",
        kind="conflicting_dates",
        candidates=[_candidate(sent, "sent", span), _candidate(received[0], "received", span)],
        detector_confidence=0.85,
        applied_candidate_confidence=0.5,
        span=span,
    )


def detect_email(data: bytes, *, filename: str) -> Detection:
    """An RFC 822 message (.eml): its envelope through `detect_envelope`."""
    message = BytesParser(policy=policy.default).parsebytes(data)
    assert isinstance(message, EmailMessage)
    body_part = message.get_body(preferencelist=("plain",))
    return detect_envelope(
        Mail(
            subject=str(message.get("Subject") or filename),
            sender=str(message.get("From", "")),
            to=", ".join(str(v) for v in message.get_all("To", []) or []),
            cc=", ".join(str(v) for v in message.get_all("Cc", []) or []),
            raw_date=str(message.get("Date")) if message.get("Date") is not None else None,
            received=received_times(message),
            body=body_part.get_content() if body_part is not None else "",
        ),
        filename=filename,
    )


def detect_envelope(mail: Mail, *, filename: str) -> Detection:
    """One EMAIL fact per message (its Date as `validFrom`), at most one envelope-date
    finding, and the From/To/Cc people — for `.eml` and Outlook `.msg` alike. The
    canonical text is the header summary plus the plain-text body; the finding's span
    is its Date line."""
    subject = mail.subject or filename
    raw_date, received = mail.raw_date, mail.received
    sent = header_time(raw_date)
    date_line = f"Date: {raw_date}" if raw_date else "Date: (none)"
    head = "\n".join([f"Subject: {subject}", f"From: {mail.sender}", f"To: {mail.to}", date_line])
    text = f"{head}\n\n{mail.body}"
    start = len(head) - len(date_line)  # the Date line ends the header block
    span = (start, len(head))
    finding = (
        rule_missing_date(raw_date, received, span)
        or rule_unparseable_date(raw_date, sent, received, span)
        or rule_date_received_mismatch(sent, received, span)
    )
    fact = Fact(
        key="message",
        labels=["EMAIL"],
        properties={"name": subject, "subject": subject},
        valid_from=sent.astimezone(UTC).date() if sent else None,
        span=span,
    )
    detection = Detection(
        title=subject,
        text=text,
        facts=[fact],
        findings=[finding] if finding else [],
        reference=sent.astimezone(UTC).date() if sent else None,
    )
    for value, edge in ((mail.sender, "SENT_BY"), (mail.to, "TO"), (mail.cc, "CC")):
        for name, address in getaddresses([value] if value else []):
            if address:
                detection.people.append(
                    ("message", edge, PersonRef(name=name, email=address.lower()))
                )
    return detection
