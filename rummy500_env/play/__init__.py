"""The browser play page: play Rummy 500 against any agent, and watch recorded games.

``python -m rummy500_env.play`` (see `__main__`) serves a plain HTML/CSS/JS page (``static/``)
from a Starlette app (`server`). A `table.Table` is one game: the human in seat 0 against
computer agents that see only what their own seat may; `view` decides what the page may
be shown; `plan` chooses what "Put down all" puts down; `store` keeps every game in SQLite
after each move. Game records (`rummy500_env.engine.records`) are written for finished games and
shown step by step with ``--replay FILE``.

Needs the ``play`` extra (starlette, uvicorn); nothing here is imported by the rest of the
package.
"""
