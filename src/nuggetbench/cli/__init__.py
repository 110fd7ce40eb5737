"""The ``nuggetbench`` command line: a thin click group whose commands load lazily.

``nuggetbench --help`` imports nothing heavy: each command's module is imported only when that
command runs (or its own ``--help`` is asked for).
"""

from __future__ import annotations

import errno
import importlib
import sys

import click

from nuggetbench._version import __version__
from nuggetbench.cli._globals import configure_logging, global_params
from nuggetbench.errors import NuggetbenchError
from nuggetbench.llm.secrets import mask_secrets

# name -> (module:attribute, one-line help shown by `nuggetbench --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": (
        "nuggetbench.cli.run:run_command",
        "Retrieve on a dataset with one or more retrievers and score the runs.",
    ),
    "evaluate": (
        "nuggetbench.cli.evaluate:evaluate_command",
        "Score an existing run file against qrels or a dataset.",
    ),
    "trec_eval": (
        "nuggetbench.cli.trec_eval:trec_eval_command",
        "trec_eval's drop-in: its options, its defaults (no -c) and its text output.",
    ),
    "datasets": (
        "nuggetbench.cli.datasets:datasets_group",
        "List, describe and download datasets.",
    ),
    "measures": (
        "nuggetbench.cli.measures:measures_command",
        "List the measures and profiles nuggetbench knows.",
    ),
    "retrievers": (
        "nuggetbench.cli.retrievers:retrievers_command",
        "List the retriever specs and their options.",
    ),
    "chunk": (
        "nuggetbench.cli.chunk:chunk_command",
        "Cut notebooks into passages and write a BEIR corpus.",
    ),
    "compare": (
        "nuggetbench.cli.compare:compare_command",
        "Compare runs: CIs, paired tests, multiple-testing correction.",
    ),
    "cache": (
        "nuggetbench.cli.cache:cache_group",
        "See and clear the caches: list, size, clear [--older-than 30d].",
    ),
    "reproduce": (
        "nuggetbench.cli.reproduce:reproduce_command",
        "Run published tables' recipes here and check every value (--list shows them).",
    ),
    "report": (
        "nuggetbench.cli.report:report_command",
        "Write a self-contained HTML report (and paper figures) of a run's output folder.",
    ),
    "judge": (
        "nuggetbench.cli.judge:judge_command",
        "Fill the holes of runs with LLM judgments (0-3), or measure their agreement.",
    ),
    "answers": (
        "nuggetbench.cli.answers:answers_command",
        "Score generated answers by the nuggets they support (AutoNuggetizer's scores).",
    ),
    "nuggets": (
        "nuggetbench.cli.nuggets:nuggets_command",
        "Create nuggets for a dataset's queries from their relevant documents (LLM).",
    ),
    "build": (
        "nuggetbench.cli.build:build_command",
        "Build a FreshStack-style benchmark from Q&A and repositories.",
    ),
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when the command is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attr = entry[0].split(":")
        command = getattr(importlib.import_module(module_name), attr)
        _add_global_params(command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _add_global_params(command: click.Command) -> None:
    """Give *command* (and a group's subcommands) ``-v`` and ``--no-progress``, once."""
    taken = {opt for p in command.params for opt in getattr(p, "opts", ())}
    command.params.extend(p for p in global_params() if not taken & set(p.opts))
    for sub in getattr(command, "commands", {}).values():
        _add_global_params(sub)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="nuggetbench")
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="More log output (-v info, -vv debug); also after the command.",
)
@click.option("--no-progress", is_flag=True, help="Hide progress bars; also after the command.")
@click.pass_context
def cli(ctx: click.Context, verbose: int, no_progress: bool) -> None:
    """nuggetbench: measure how well retrieval systems find the evidence people need.

    \b
    Examples:
      nuggetbench run beir/scifact -r bm25 -r bm25:k1=0.9,b=0.4
      nuggetbench evaluate qrels.txt run.trec -m nDCG@10 -m AP --per-query
      nuggetbench datasets list

    Environment: NUGGETBENCH_HOME (datasets, caches; default ~/.cache/nuggetbench),
    NUGGETBENCH_DATA (read-only dataset folders searched first, ':'-separated),
    NUGGETBENCH_OFFLINE=1 (no downloads).
    """
    obj = ctx.ensure_object(dict)
    obj["verbose"] = max(obj.get("verbose", 0), verbose)
    obj["no_progress"] = obj.get("no_progress", False) or no_progress
    configure_logging(obj["verbose"])


def main(argv: list[str] | None = None) -> None:
    """Run the command line (*argv*, default ``sys.argv[1:]``) with click; the console script
    and ``python -m nuggetbench`` come through :func:`nuggetbench._entry.main`, which answers a
    bare ``--help`` first."""

    try:
        cli.main(args=argv, prog_name="nuggetbench", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.message = mask_secrets(exc.message)  # an option's value is quoted in its error
        exc.show()
        sys.exit(exc.exit_code)
    except NuggetbenchError as exc:  # every message is masked once more here, whatever made it
        click.echo(f"error: {mask_secrets(str(exc))}", err=True)
        sys.exit(2)
    except OSError as exc:  # a full disk, a read-only folder: say which file, no traceback
        where = f"{exc.filename}: " if exc.filename else ""
        reason = exc.strerror or str(exc) or type(exc).__name__
        click.echo(
            mask_secrets(
                f"error: {where}{reason}"
                + (f" [errno {exc.errno}]" if exc.errno else "")
                + ". "
                + _os_advice(exc.errno)
            ),
            err=True,
        )
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)


_ADVICE = {
    errno.ENOSPC: "Free some space or choose another folder (-o, NUGGETBENCH_HOME), then try again",
    errno.EDQUOT: "Free some space (a disk quota is full) or choose another folder (-o, "
    "NUGGETBENCH_HOME), then try again",
    errno.EACCES: "Check its permissions (this user may not read or write it), or choose another "
    "folder (-o, NUGGETBENCH_HOME)",
    errno.EROFS: "It is on a read-only file system: choose another folder (-o, NUGGETBENCH_HOME)",
    errno.ENOTDIR: "A part of this path is a file, not a folder: give a folder's path",
    errno.EISDIR: "This is a folder where a file belongs: give the file's path",
    errno.ENOENT: "Check the path (it does not exist)",
}
_ADVICE[errno.EPERM] = _ADVICE[errno.EACCES]


def _os_advice(code: int | None) -> str:
    """What to do about an ``OSError`` of errno *code* (its real cause, not always a full disk)."""
    return _ADVICE.get(
        code or 0,
        "Check the path and its permissions, or choose another folder (-o, NUGGETBENCH_HOME)",
    )
