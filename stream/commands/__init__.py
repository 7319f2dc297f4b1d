"""The commands of ``checkpoint-guard``, one module each (plain :pypi:`click`).

:mod:`stream.cli` lists them and imports a module only when its command runs. Only
:mod:`stream.commands.worker` imports faust (when the worker starts).
"""
