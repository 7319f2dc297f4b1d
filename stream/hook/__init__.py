"""The Claude Code hook: stream a session as it happens, hand dropped prohibitions back (issue 23).

``checkpoint-guard hook claude-code`` is run by Claude Code at ``PreCompact``,
``SessionStart`` (source ``compact``), ``Stop`` and ``SessionEnd``. Each call reads the
transcript records added since the session's cursor (:mod:`.store`), turns them into
events with the very adapter ``ingest claude-code`` uses (its state is kept between
calls, so live = batch), appends them to the session's spool (:mod:`.spool`, the write-
ahead log) and sends the spool to Kafka when the broker answers. After a compaction it
prints the prohibitions in force that the new summary does not carry
(:mod:`.reinject`) as the hook's ``additionalContext``. :mod:`.install` merges the hook
entries into Claude Code's settings files. Manual: ``docs/HOOK.md``.
"""
