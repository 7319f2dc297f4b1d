"""The offline tools: the engine over a file or over the topics, never as the live worker.

``replay`` runs JSONL input events through the engine in process (no broker); ``forensics``
reads the topics with a group-less consumer (no offset commits) to replay, verify and
explain. Neither moves the live worker's committed offsets or writes its state; the CLI
commands (``stream.commands.replay``, ``_forensics``, ``explain``) are their shell.
"""
