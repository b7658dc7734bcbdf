"""Outlook `.msg` (extract-msg): the envelope for the same rules as `.eml` — the Date
and Received headers of the transport headers when the message kept them, else the
submit time and the delivery time properties — sender, recipients, subject, plain body."""

import logging
from datetime import UTC, datetime
from email.utils import format_datetime

import extract_msg
from extract_msg.exceptions import ExMsgBaseException

from .base import Extracted, Mail, Metadata, Unreadable, received_from_headers

logging.getLogger("extract_msg").setLevel(logging.WARNING)


def _aware(value: object) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _mail(message: "extract_msg.msg_classes.Message") -> Mail:
    if message.headerText:  # the transport headers the message kept
        header = message.header
        raw_date = header.get("Date")
        received = received_from_headers(header.get_all("Received") or [])
    else:  # no transport headers: the submit and delivery time properties
        sent = _aware(message.date)
        raw_date = format_datetime(sent) if sent else None
        delivered = _aware(message.receivedTime)
        received = [delivered] if delivered else []
    return Mail(
        subject=str(message.subject or ""),
        sender=str(message.sender or ""),
        to=str(message.to or ""),
        cc=str(message.cc or ""),
        raw_date=str(raw_date) if raw_date else None,
        received=received,
        body=str(message.body or "").replace("\r\n", "\n"),
    )


def extract(data: bytes, name: str) -> Extracted:
    try:
        message = extract_msg.openMsg(data, delayAttachments=True)
    except (ExMsgBaseException, OSError, ValueError, KeyError) as exc:
        raise Unreadable(f"corrupt: the Outlook message cannot be read ({exc})") from exc
    try:
        if not isinstance(message, extract_msg.Message):
            raise Unreadable(f"unsupported: an Outlook {type(message).__name__}, not a message")
        mail = _mail(message)
    except (ExMsgBaseException, OSError, ValueError, KeyError) as exc:
        raise Unreadable(f"corrupt: the Outlook message cannot be read ({exc})") from exc
    finally:
        message.close()
    sent = _aware(message.date)
    return Extracted(
        text=mail.body,
        title=mail.subject,
        metadata=Metadata(authors=[mail.sender] if mail.sender else [], created=sent),
        mail=mail,
    )
