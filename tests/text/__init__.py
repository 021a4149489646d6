"""Tests of ``aicr_gen/text``: small text grammars (cron schedules, versions, image references)."""
