"""Curation's huey task: the consolidation pass in the background, never on a hook's path.

Huey's schedule is fixed when the consumer starts, and the interval is a setting that can
change at any time: so the task wakes every hour and runs a pass only when
CLAUDE_MEM_CONSOLIDATE_EVERY_HOURS have gone by since the last one.
"""

from __future__ import annotations

import logging

from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from memory import config
from memory.curation.consolidation.run import ConsolidationError, consolidation_run, pass_due

log = logging.getLogger(__name__)


def consolidation_when_due() -> str:
    """Run the pass if it is due and not off; returns its one-line summary ("" if not run)."""
    if config.consolidate_mode() == "off" or not pass_due():
        return ""
    try:
        report = consolidation_run()
    except ConsolidationError as exc:
        log.warning("consolidation did not run: %s", exc)
        return ""
    log.info("%s", report.summary())
    return report.summary()


@db_periodic_task(crontab(minute="41"))
def consolidation_task() -> None:
    consolidation_when_due()
