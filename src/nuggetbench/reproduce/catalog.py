"""The shipped recipes (package data under ``nuggetbench/recipes/``) and finding one by name or
path."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from nuggetbench.errors import UnknownNameError, suggest
from nuggetbench.reproduce.parse import read_recipe
from nuggetbench.reproduce.recipe import Recipe

__all__ = ["find_recipe", "recipe_names", "recipes_folder", "shipped_recipes"]


def recipes_folder() -> Path:
    """The folder of the shipped recipes (``nuggetbench/recipes``)."""
    return Path(str(resources.files("nuggetbench").joinpath("recipes")))


def recipe_names() -> list[str]:
    """The shipped recipes' names (file stems), sorted."""
    folder = recipes_folder()
    return sorted(p.stem for p in folder.glob("*.toml")) if folder.is_dir() else []


def shipped_recipes() -> list[Recipe]:
    """Every shipped recipe, read and validated, sorted by name.

    Raises:
        FormatError: a shipped recipe is invalid (a bug of the package: the message names it).
    """
    folder = recipes_folder()
    return [read_recipe(folder / f"{name}.toml", shipped=True) for name in recipe_names()]


def find_recipe(name_or_path: str | Path) -> Recipe:
    """A shipped recipe by name, or a recipe file by path (``.toml``, or an existing file).

    Raises:
        UnknownNameError: neither a shipped recipe's name nor a file (the nearest is named).
        FormatError: the file is not a valid recipe.
    """
    text = str(name_or_path)
    path = Path(text).expanduser()
    if text.endswith(".toml") or path.is_file():
        if not path.is_file():
            raise UnknownNameError(f"{text}: no such recipe file; check the path")
        return read_recipe(path)
    names = recipe_names()
    if text not in names:
        raise UnknownNameError(
            f"unknown recipe {text!r}.{suggest(text, names)} `nuggetbench reproduce --list` "
            "lists the shipped recipes; a recipe of your own is given by its .toml path"
        )
    return read_recipe(recipes_folder() / f"{text}.toml", shipped=True)
