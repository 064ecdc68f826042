"""What ``latdoc serve`` draws: the runs list, a run's page framed with where it stands
among the others, and a page that says why there is nothing to show.

A run's page is the page ``latdoc report RUN --html`` writes, made by the same renderer
(:func:`latdoc.features.report.page_of`); serve only frames it, with a bar above it (all
runs, the run's status, the runs it is tied to) and, while the run is written to, the
script that follows it (:func:`framed`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import quote, urlencode

from latdoc.features.serve.analysis import Related, RunsPage
from latdoc.i18n import N_, Message, gettext, language, translate
from latdoc.model import dollars
from latdoc.report.pages import environment
from latdoc.store import RUN_KINDS, RunInfo

_STATUS = {
    "running": N_("running"),
    "done": N_("done"),
    "interrupted": N_("interrupted"),
    "failed": N_("failed"),
    "recorded": N_("recorded"),
}
"""A run's status as a page says it (the store's own words, translated)."""


def run_href(base: str, run_id: str) -> str:
    return f"{base}/runs/{quote(run_id)}"


def _href(base: str, path: str, params: dict[str, str]) -> str:
    return f"{base}{path}{'?' + urlencode(params) if params else ''}"


def _count_line(page: RunsPage) -> str:
    shown = len(page.runs)
    if not page.total:
        return translate(Message("No run matches."))
    return translate(
        Message("{shown} of {total:,} runs shown, newest first.", shown=shown, total=page.total)
    )


def runs_html(page: RunsPage, *, base: str, store: str, live_url: str | None) -> str:
    """The runs list: the filter form, one row per run, the pages."""
    query = page.query
    rows = [
        {
            "href": run_href(base, run.run_id),
            "started": f"{run.started_at:%Y-%m-%d %H:%M:%S}",
            "kind": run.kind,
            "status": run.status,
            "status_text": gettext(_STATUS.get(run.status, run.status)),
            "endpoint": run.endpoint,
            "model": run.model,
            "verdict": run.verdict or "",
            "requests": f"{run.requests:,}" + (f" ({run.failed:,} failed)" if run.failed else ""),
            "cost": dollars(page.costs[run.run_id]) if run.run_id in page.costs else "",
        }
        for run in page.runs
    ]
    params = query.params()
    form = {
        "endpoint": params.get("endpoint", ""),
        "kind": params.get("kind", ""),
        "since": params.get("since", ""),
        "until": params.get("until", ""),
    }
    return (
        environment()
        .get_template("serve_runs.html.j2")
        .render(
            lang=language(),
            store=store,
            base=base,
            query=form,
            kinds=sorted(RUN_KINDS),
            endpoints=page.endpoints,
            rows=rows,
            count_line=_count_line(page),
            empty=translate(
                Message(
                    "No run is kept here yet: `latdoc diagnose`, `load` and `watch` keep "
                    "theirs in this store."
                )
                if not page.total and not params
                else Message("No run matches these filters.")
            ),
            first_href=_href(base, "/", query.params(after=None)) if query.after else None,
            next_href=(
                None
                if page.next_after is None
                else _href(base, "/", query.params(after=page.next_after))
            ),
            api_href=_href(base, "/api/runs", query.params()),
            live_url=live_url,
        )
    )


def run_facts(info: RunInfo) -> list[tuple[str, str]]:
    """What a run is, in the terms its page shows (a run with no page of its own)."""
    finished = "" if info.finished_at is None else f"{info.finished_at:%Y-%m-%d %H:%M:%S} UTC"
    return [
        (gettext("Run"), info.run_id),
        (gettext("Kind"), info.kind),
        (gettext("Status"), gettext(_STATUS.get(info.status, info.status))),
        (gettext("Endpoint"), info.endpoint),
        (gettext("Model"), info.model),
        (gettext("Started (UTC)"), f"{info.started_at:%Y-%m-%d %H:%M:%S}"),
        (gettext("Finished"), finished),
        (gettext("Requests"), f"{info.requests:,}"),
        (gettext("Failed"), f"{info.failed:,}"),
    ]


def nav_html(info: RunInfo, related: Related, *, base: str, live: bool) -> str:
    """The bar above a run's page: back to every run, what the run is, and the runs it is
    tied to."""
    from markupsafe import Markup, escape

    parts = [
        f'<a href="{escape(base)}/">{escape(gettext("All runs"))}</a>',
        f"<span>{escape(info.kind)} · <code>{escape(info.run_id)}</code></span>",
    ]
    if live:
        parts.append(f'<span class="live" role="status">{escape(gettext("running"))}</span>')
    else:
        parts.append(f"<span>{escape(gettext(_STATUS.get(info.status, info.status)))}</span>")
    if related.proposed_by is not None:
        run = related.proposed_by
        said = translate(Message("Proposed by the diagnosis {run}", run=run.run_id))
        parts.append(f'<a href="{escape(run_href(base, run.run_id))}">{escape(said)}</a>')
    for run in related.verified_by:
        remedy = str(run.meta.get("remedy", ""))
        said = translate(Message("Verified: {remedy} ({run})", remedy=remedy, run=run.run_id))
        parts.append(f'<a href="{escape(run_href(base, run.run_id))}">{escape(said)}</a>')
    label = escape(gettext("Run"))
    return Markup(f'<nav class="serve" aria-label="{label}">{" ".join(parts)}</nav>')


_BODY = re.compile(r"<body([^>]*)>", re.IGNORECASE)


def framed(page: str, nav: str, *, live_url: str | None) -> str:
    """A report page with serve's bar at its top, and the script that follows a run
    being written at its end; the page itself is left as its renderer made it."""
    from markupsafe import escape

    live = environment().get_template("_serve_live.html.j2").render(live_url=live_url)
    style = environment().get_template("_serve.css").render()
    data = f' data-live="{escape(live_url)}"' if live_url else ""
    page = _BODY.sub(lambda m: f"<body{m.group(1)}{data}>\n{nav}", page, count=1)
    page = page.replace("</head>", f"<style>\n{style}</style>\n</head>", 1)
    head, sep, tail = page.rpartition("</body>")
    return f"{head}{live}{sep}{tail}" if sep else page + live


def message_html(
    title: str,
    lines: Sequence[str],
    *,
    base: str,
    nav: str = "",
    facts: Sequence[tuple[str, str]] = (),
    notes: Sequence[str] = (),
    live_url: str | None = None,
) -> str:
    """A page that says something instead of a report: an error, or a run's facts."""
    return (
        environment()
        .get_template("serve_message.html.j2")
        .render(
            lang=language(),
            title=title,
            lines=lines,
            base=base,
            nav=nav,
            facts=facts,
            notes=notes,
            live_url=live_url,
        )
    )
