"""The compaction-log family: logs of a real compaction -> input events (docs/COMPACTION_LOGS.md).

``claude_code`` and ``openhands`` read the two log formats; ``compaction_logs`` is what they
share (the context's events, the judged context); ``prohibitions`` extracts and matches the
user's rules; ``judge``, ``judge_rules``, ``cues`` and ``model_judge`` decide what a summary
carries. Plain Python, no faust, no aiokafka; this package imports none of its modules, so a
hook call that judges nothing pays for none of them.
"""
