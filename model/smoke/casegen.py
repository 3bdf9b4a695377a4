"""The source of the two shipped case files, ``data/default_cases.jsonl`` and ``data/tiny_cases.jsonl``.

The files are the data (users copy and edit them); this module writes them from one tool catalogue
so that every case offers the same, consistent tool definitions. A test fails when a shipped file
differs from what this module writes; regenerate both with::

    python -m rwkv_registry.model.smoke.casegen registry/data

The default set has 50 tool-calling cases in the five categories of seed 003, over one toolset of
26 realistic local-agent tools (files, mail, calendar, cards, tasks, web, notes, reminders) with
near-duplicates side by side (archive vs delete, search mail vs search web, move vs rename…). The
tiny set (14 cases, 3 short tools and no_tool) is what the demo's tiny State and MiSS are trained to answer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rwkv_registry.index.smoke_cases import DEFAULT_CASES, TINY_CASES
from rwkv_registry.model.smoke.prompt import fenced_call


def _s(desc: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": desc, **extra}


def _tool(name: str, description: str, required: Sequence[str] = (), **props: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "arguments": {"type": "object", "properties": props, "required": list(required)},
    }


# --------------------------------------------------------------------------- the default toolset

DESK_TOOLS: list[dict[str, Any]] = [
    _tool("read_file", "Read a text file and return its content.", ["path"], path=_s("File path.")),
    _tool(
        "write_file",
        "Create or overwrite a text file.",
        ["path", "content"],
        path=_s("File path."),
        content=_s("Full new content."),
    ),
    _tool("list_dir", "List the files of a folder.", ["path"], path=_s("Folder path.")),
    _tool(
        "search_files",
        "Find files on this computer whose name or content matches a query.",
        ["query"],
        query=_s("Words to look for."),
        folder=_s("Limit the search to this folder."),
    ),
    _tool(
        "move_file",
        "Move a file into another folder (the name stays).",
        ["path", "folder"],
        path=_s("File to move."),
        folder=_s("Destination folder."),
    ),
    _tool(
        "rename_file",
        "Rename a file in place (same folder).",
        ["path", "new_name"],
        path=_s("File to rename."),
        new_name=_s("New file name."),
    ),
    _tool("delete_file", "Delete a file permanently.", ["path"], path=_s("File to delete.")),
    _tool(
        "search_mail",
        "Search the user's mailbox.",
        ["query"],
        query=_s("Words, sender or subject to look for."),
        limit={"type": "integer", "description": "Maximum number of results."},
    ),
    _tool("read_mail", "Open one email by id.", ["id"], id=_s("Email id.")),
    _tool(
        "send_mail",
        "Write and send a new email.",
        ["to", "subject", "body"],
        to=_s("Recipient address."),
        subject=_s("Subject line."),
        body=_s("Message text."),
        cc=_s("Copy recipient address."),
    ),
    _tool(
        "reply_mail",
        "Reply to an email.",
        ["id", "body"],
        id=_s("Email id to reply to."),
        body=_s("Reply text."),
    ),
    _tool(
        "forward_mail",
        "Forward an email to someone.",
        ["id", "to"],
        id=_s("Email id."),
        to=_s("Recipient address."),
        note=_s("Text added above the forwarded mail."),
    ),
    _tool("archive_mail", "Move an email out of the inbox into the archive (kept).", ["id"], id=_s("Email id.")),
    _tool("delete_mail", "Delete an email for good.", ["id"], id=_s("Email id.")),
    _tool(
        "list_events",
        "List calendar events between two dates.",
        ["start", "end"],
        start=_s("First day, YYYY-MM-DD."),
        end=_s("Last day, YYYY-MM-DD."),
    ),
    _tool(
        "create_event",
        "Add an event to the calendar.",
        ["title", "start"],
        title=_s("Event title."),
        start=_s("Start, YYYY-MM-DD HH:MM."),
        duration_min={"type": "integer", "description": "Length in minutes."},
        attendees={"type": "array", "items": {"type": "string"}, "description": "Email addresses to invite."},
    ),
    _tool(
        "update_event",
        "Change the time or title of an existing event.",
        ["event_id"],
        event_id=_s("Event id."),
        start=_s("New start, YYYY-MM-DD HH:MM."),
        title=_s("New title."),
    ),
    _tool("cancel_event", "Cancel (remove) a calendar event.", ["event_id"], event_id=_s("Event id.")),
    _tool(
        "create_card",
        "Create a card on a project board.",
        ["board", "title"],
        board=_s("Board name."),
        title=_s("Card title."),
        column=_s("Column, e.g. todo, doing, done."),
    ),
    _tool(
        "move_card",
        "Move a card to another column of its board.",
        ["card_id", "column"],
        card_id=_s("Card id."),
        column=_s("Target column."),
    ),
    _tool(
        "archive_card",
        "Archive a card: it leaves the board but can be restored.",
        ["card_id"],
        card_id=_s("Card id."),
    ),
    _tool("delete_card", "Delete a card permanently; it cannot be restored.", ["card_id"], card_id=_s("Card id.")),
    _tool(
        "web_search",
        "Search the public web.",
        ["query"],
        query=_s("Search terms."),
    ),
    _tool("fetch_url", "Download a web page and return its text.", ["url"], url=_s("Address of the page.")),
    _tool(
        "set_reminder",
        "Remind the user of something at a given time.",
        ["text", "at"],
        text=_s("What to remind."),
        at=_s("When, YYYY-MM-DD HH:MM."),
    ),
    _tool("add_note", "Save a short note in the user's notes.", ["text"], text=_s("Note text.")),
]


def _c(
    cid: str,
    category: str,
    user: str | list[tuple[str, str]],
    name: str,
    arguments: dict[str, Any],
    check: Sequence[str] = (),
    note: str = "",
    tools: str | list[dict[str, Any]] = "desk",
) -> dict[str, Any]:
    messages = [("user", user)] if isinstance(user, str) else user
    out: dict[str, Any] = {
        "id": cid,
        "category": category,
        "tools": tools,
        "messages": [{"role": r, "content": t} for r, t in messages],
        "expected": {"name": name, "arguments": arguments},
    }
    if check:
        out["check_values"] = list(check)
    if note:
        out["note"] = note
    return out


def _call(name: str, **arguments: Any) -> str:
    return fenced_call(name, arguments)


E, H, A, N, M = "easy-selection", "hard-selection", "argument-filling", "abstention", "multi-step"

DEFAULT_SET: list[dict[str, Any]] = [
    # easy selection: one tool plainly fits
    _c("easy-01", E, "Show me what's in notes/todo.txt.", "read_file", {"path": "notes/todo.txt"}),
    _c("easy-02", E, "What files are in my Downloads folder?", "list_dir", {"path": "Downloads"}),
    _c("easy-03", E, "Search the web for the RWKV-7 paper.", "web_search", {"query": "RWKV-7 paper"}),
    _c(
        "easy-04",
        E,
        "Remind me to call the dentist tomorrow at 9, that's 2026-10-20 09:00.",
        "set_reminder",
        {"text": "call the dentist", "at": "2026-10-20 09:00"},
    ),
    _c("easy-05", E, "Jot down a note: buy oat milk.", "add_note", {"text": "buy oat milk"}),
    _c("easy-06", E, "Open mail m-2041.", "read_mail", {"id": "m-2041"}),
    _c(
        "easy-07",
        E,
        "Get me the text of https://example.org/changelog.",
        "fetch_url",
        {"url": "https://example.org/changelog"},
    ),
    _c(
        "easy-08",
        E,
        "What's on my calendar from 2026-10-19 to 2026-10-25?",
        "list_events",
        {"start": "2026-10-19", "end": "2026-10-25"},
    ),
    _c(
        "easy-09",
        E,
        "Put a card 'Fix login bug' on the backend board.",
        "create_card",
        {"board": "backend", "title": "Fix login bug"},
    ),
    _c("easy-10", E, "Look through my mailbox for the train tickets.", "search_mail", {"query": "train tickets"}),
    # hard selection: near-duplicate tools side by side
    _c(
        "hard-01",
        H,
        "Archive card c-88, we might need it later.",
        "archive_card",
        {"card_id": "c-88"},
        note="archive vs delete: the user wants it kept",
    ),
    _c(
        "hard-02",
        H,
        "Card c-91 was a mistake, remove it for good.",
        "delete_card",
        {"card_id": "c-91"},
        note="archive vs delete: permanent",
    ),
    _c("hard-03", H, "Get mail m-77 out of my inbox but keep it.", "archive_mail", {"id": "m-77"}),
    _c("hard-04", H, "Permanently delete the spam mail m-13.", "delete_mail", {"id": "m-13"}),
    _c(
        "hard-05",
        H,
        "Did Alice email me about the budget?",
        "search_mail",
        {"query": "Alice budget"},
        note="search mail vs search web",
    ),
    _c(
        "hard-06",
        H,
        "What's the latest news about the budget vote?",
        "web_search",
        {"query": "budget vote news"},
        note="search web vs search mail",
    ),
    _c(
        "hard-07",
        H,
        "Rename report.docx to report-final.docx.",
        "rename_file",
        {"path": "report.docx", "new_name": "report-final.docx"},
        note="rename vs move",
    ),
    _c(
        "hard-08",
        H,
        "Put report.docx into the Archive folder.",
        "move_file",
        {"path": "report.docx", "folder": "Archive"},
        note="move vs rename",
    ),
    _c(
        "hard-09",
        H,
        "Move card c-12 to done.",
        "move_card",
        {"card_id": "c-12", "column": "done"},
        note="move card vs archive card",
    ),
    _c(
        "hard-10",
        H,
        "Push event e-5 to Friday 2026-10-23 14:00.",
        "update_event",
        {"event_id": "e-5", "start": "2026-10-23 14:00"},
        note="update vs cancel vs create",
    ),
    _c(
        "hard-11",
        H,
        "Call off event e-9, it's not happening.",
        "cancel_event",
        {"event_id": "e-9"},
        note="cancel vs update",
    ),
    _c(
        "hard-12",
        H,
        "Which of my files mention the word invoice?",
        "search_files",
        {"query": "invoice"},
        note="search files vs search mail",
    ),
    # argument filling: every required argument, none invented
    _c(
        "args-01",
        A,
        "Email bob@example.com with subject 'Lunch' and say: noon at the usual place?",
        "send_mail",
        {"to": "bob@example.com", "subject": "Lunch", "body": "noon at the usual place?"},
        ["to", "subject"],
    ),
    _c(
        "args-02",
        A,
        "Save 'milk, eggs, bread' into shopping.txt.",
        "write_file",
        {"path": "shopping.txt", "content": "milk, eggs, bread"},
        ["path"],
    ),
    _c(
        "args-03",
        A,
        "Book 'Design review' on 2026-10-21 15:00 for 45 minutes.",
        "create_event",
        {"title": "Design review", "start": "2026-10-21 15:00", "duration_min": 45},
        ["start"],
    ),
    _c(
        "args-04",
        A,
        "Reply to m-310: Thanks, received.",
        "reply_mail",
        {"id": "m-310", "body": "Thanks, received."},
        ["id"],
    ),
    _c(
        "args-05",
        A,
        "Forward m-52 to carol@example.com.",
        "forward_mail",
        {"id": "m-52", "to": "carol@example.com"},
        ["id", "to"],
    ),
    _c(
        "args-06",
        A,
        "Add 'Write release notes' to the todo column of the docs board.",
        "create_card",
        {"board": "docs", "title": "Write release notes", "column": "todo"},
        ["board", "column"],
    ),
    _c(
        "args-07",
        A,
        "Find files about taxes in the Documents folder.",
        "search_files",
        {"query": "taxes", "folder": "Documents"},
        ["folder"],
    ),
    _c(
        "args-08",
        A,
        "Remind me on 2026-11-01 08:30 to renew the passport.",
        "set_reminder",
        {"text": "renew the passport", "at": "2026-11-01 08:30"},
        ["at"],
    ),
    _c(
        "args-09",
        A,
        "Show the 5 most recent mails from the bank.",
        "search_mail",
        {"query": "bank", "limit": 5},
        ["limit"],
    ),
    _c(
        "args-10",
        A,
        "Move card c-40 into the doing column.",
        "move_card",
        {"card_id": "c-40", "column": "doing"},
        ["card_id", "column"],
    ),
    # abstention: no tool applies
    _c("abst-01", N, "Thanks, that's all!", "no_tool", {"reason": "You're welcome!"}),
    _c("abst-02", N, "Hello there.", "no_tool", {"reason": "Hello! How can I help?"}),
    _c("abst-03", N, "What is 12 times 7?", "no_tool", {"reason": "84."}),
    _c(
        "abst-04",
        N,
        "Order me a pizza.",
        "no_tool",
        {"reason": "I have no tool to order food."},
        note="sounds actionable, no tool covers it",
    ),
    _c(
        "abst-05",
        N,
        "Turn off the living room lights.",
        "no_tool",
        {"reason": "I cannot control the lights."},
        note="sounds actionable, no tool covers it",
    ),
    _c(
        "abst-06",
        N,
        "Can you explain what a state file is?",
        "no_tool",
        {"reason": "A state file holds the trained initial state of each layer."},
    ),
    _c(
        "abst-07",
        N,
        "Pay my electricity bill.",
        "no_tool",
        {"reason": "I have no payment tool."},
        note="sounds actionable, no tool covers it",
    ),
    _c("abst-08", N, "Good night!", "no_tool", {"reason": "Good night!"}),
    _c("abst-09", N, "Translate 'merci' into English.", "no_tool", {"reason": "Thank you."}),
    _c(
        "abst-10",
        N,
        "Book me a flight to Lisbon.",
        "no_tool",
        {"reason": "I have no tool to book flights."},
        note="sounds actionable, no tool covers it",
    ),
    # multi-step: the next call after a tool result
    _c(
        "multi-01",
        M,
        [
            ("user", "Find Alice's mail about the budget and forward it to bob@example.com."),
            ("assistant", _call("search_mail", query="Alice budget")),
            ("tool", '[{"id": "m-611", "from": "alice@example.com", "subject": "Budget 2027"}]'),
        ],
        "forward_mail",
        {"id": "m-611", "to": "bob@example.com"},
        ["id", "to"],
    ),
    _c(
        "multi-02",
        M,
        [
            ("user", "Read plan.txt and put its first task on the ops board."),
            ("assistant", _call("read_file", path="plan.txt")),
            ("tool", "1. Rotate the backup keys\n2. Update the runbook"),
        ],
        "create_card",
        {"board": "ops", "title": "Rotate the backup keys"},
        ["board"],
    ),
    _c(
        "multi-03",
        M,
        [
            ("user", "What's on my calendar on 2026-10-22? Cancel the dentist."),
            ("assistant", _call("list_events", start="2026-10-22", end="2026-10-22")),
            (
                "tool",
                '[{"id": "e-31", "title": "Dentist", "start": "2026-10-22 10:00"}, '
                '{"id": "e-32", "title": "Standup", "start": "2026-10-22 09:30"}]',
            ),
        ],
        "cancel_event",
        {"event_id": "e-31"},
        ["event_id"],
    ),
    _c(
        "multi-04",
        M,
        [
            ("user", "Look up the release date of RWKV-8 and note it down."),
            ("assistant", _call("web_search", query="RWKV-8 release date")),
            ("tool", "RWKV-8 is expected in spring 2027."),
        ],
        "add_note",
        {"text": "RWKV-8 is expected in spring 2027."},
    ),
    _c(
        "multi-05",
        M,
        [
            ("user", "Which files are in Inbox? Delete old.tmp if it is there."),
            ("assistant", _call("list_dir", path="Inbox")),
            ("tool", "a.pdf\nold.tmp\nnotes.md"),
        ],
        "delete_file",
        {"path": "Inbox/old.tmp"},
    ),
    _c(
        "multi-06",
        M,
        [
            ("user", "Search my mail for the invoice from Acme and archive it."),
            ("assistant", _call("search_mail", query="invoice Acme")),
            ("tool", '[{"id": "m-902", "from": "billing@acme.test", "subject": "Invoice 2291"}]'),
        ],
        "archive_mail",
        {"id": "m-902"},
        ["id"],
    ),
    _c(
        "multi-07",
        M,
        [
            ("user", "Check the weather page https://example.org/weather and tell me if I need an umbrella."),
            ("assistant", _call("fetch_url", url="https://example.org/weather")),
            ("tool", "Today: heavy rain from 14:00, 12 °C."),
        ],
        "no_tool",
        {"reason": "Yes, take an umbrella: heavy rain from 14:00."},
        note="after the result, the right move is to answer",
    ),
    _c(
        "multi-08",
        M,
        [
            ("user", "Find the meeting notes file and read it."),
            ("assistant", _call("search_files", query="meeting notes")),
            ("tool", "Documents/meeting-notes-2026-10-14.md"),
        ],
        "read_file",
        {"path": "Documents/meeting-notes-2026-10-14.md"},
        ["path"],
    ),
]

# --------------------------------------------------------------------------- the tiny set


def _bare(name: str, description: str, *args: str) -> dict[str, Any]:
    """A tool with string arguments, all required, without argument descriptions (short prompts)."""
    return {
        "name": name,
        "description": description,
        "arguments": {"type": "object", "properties": {a: {"type": "string"} for a in args}, "required": list(args)},
    }


TINY_SYSTEM = "Tools:"
TINY_TOOLS: list[dict[str, Any]] = [
    _bare("read_file", "Read a file.", "path"),
    _bare("archive_card", "Archive a card, keep it.", "card"),
    _bare("delete_card", "Delete a card for good.", "card"),
    _bare("no_tool", "No tool fits; reason is the reply.", "reason"),
]


def _t(
    cid: str, category: str, user: str | list[tuple[str, str]], name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    case = _c(cid, category, user, name, arguments, [a for a in arguments if name != "no_tool"], tools="tiny")
    case["system"] = TINY_SYSTEM
    return case


TINY_SET: list[dict[str, Any]] = [
    _t("t-easy-1", E, "Open todo.txt", "read_file", {"path": "todo.txt"}),
    _t("t-easy-2", E, "Show me todo.txt", "read_file", {"path": "todo.txt"}),
    _t("t-easy-3", E, "Read todo.txt please", "read_file", {"path": "todo.txt"}),
    _t("t-hard-1", H, "Archive card 7", "archive_card", {"card": "7"}),
    _t("t-hard-2", H, "Remove card 7 for good", "delete_card", {"card": "7"}),
    _t("t-hard-3", H, "Put card 7 away but keep it", "archive_card", {"card": "7"}),
    _t("t-hard-4", H, "Delete card 7", "delete_card", {"card": "7"}),
    _t("t-args-1", A, "Card 7: archive it", "archive_card", {"card": "7"}),
    _t("t-args-2", A, "Card 7: delete it forever", "delete_card", {"card": "7"}),
    _t("t-abst-1", N, "Thanks!", "no_tool", {"reason": "ok"}),
    _t("t-abst-2", N, "Hello", "no_tool", {"reason": "ok"}),
    _t("t-abst-3", N, "Order a pizza", "no_tool", {"reason": "ok"}),
    _t(
        "t-multi-1",
        M,
        [
            ("user", "Read plan.txt, do what it says"),
            ("assistant", _call("read_file", path="plan.txt")),
            ("tool", "delete card 7"),
        ],
        "delete_card",
        {"card": "7"},
    ),
    _t(
        "t-multi-2",
        M,
        [
            ("user", "Read plan.txt and act on it"),
            ("assistant", _call("read_file", path="plan.txt")),
            ("tool", "archive card 7"),
        ],
        "archive_card",
        {"card": "7"},
    ),
]


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def render_jsonl(toolsets: dict[str, list[dict[str, Any]]], cases: list[dict[str, Any]]) -> bytes:
    """A case file: the toolsets, then the cases, one JSON object per line."""
    lines = [_line({"toolset": name, "tools": tools}) for name, tools in toolsets.items()]
    lines += [_line(c) for c in cases]
    return ("\n".join(lines) + "\n").encode("utf-8")


def default_jsonl() -> bytes:
    """The bytes of ``data/default_cases.jsonl``."""
    return render_jsonl({"desk": DESK_TOOLS}, DEFAULT_SET)


def tiny_jsonl() -> bytes:
    """The bytes of ``data/tiny_cases.jsonl`` (the demo's tiny weights are trained on it)."""
    return render_jsonl({"tiny": TINY_TOOLS}, TINY_SET)


def write_case_files(folder: str | Path) -> list[Path]:
    """Write both case files into ``folder``; returns their paths."""
    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for name, data in ((DEFAULT_CASES, default_jsonl()), (TINY_CASES, tiny_jsonl())):
        (d / name).write_bytes(data)
        out.append(d / name)
    return out


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    for p in write_case_files(sys.argv[1] if len(sys.argv) > 1 else "registry/data"):
        print(p)
