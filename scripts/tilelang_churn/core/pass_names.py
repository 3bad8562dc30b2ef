"""A pass's identity (the ``pass_id`` column) and the names shown for it; strings only, no TileLang.

``pass`` keeps the run record's spelling (the part after TVM's last dot), which gives ``tl.Simplify`` and
``tirx.Simplify`` one name and every nested ``def pass_fn`` function pass the same ``pass_fn``. ``pass_id`` tells
them apart (trace/pass_identity.py finds it in the lowering itself):

    tl.Simplify, tirx.Simplify          a named pass: TVM's full name
    tilelang.transform.HoistBroadcastValues
                                        an anonymous function pass: the factory whose body defines its
                                        ``pass_fn`` (its public path where a package exports it)
    pass_fn@tilelang/engine/lower.py:95 an anonymous pass whose factory is not known: where it was applied
    codegen, lower, setup               rows that are not a pass run: the same as ``pass``

Tables written before the column read with ``pass_id`` equal to ``pass`` (passes_table.ADDED_COLUMNS).
"""

from __future__ import annotations

FACTORY_PACKAGES = ("tilelang.", "tvm.")  # a pass_id that is a Python path: an anonymous pass's factory
# TVM's namespace of its TIR passes was renamed: tir.Simplify and tirx.Simplify are one pass across releases
NAMESPACE_ALIASES = {"tirx": "tir"}
# the namespace a factory's pass gets once its release names it (0.1.12's anonymous AddWrapperForSingleBufStore
# is 0.1.15's tl.AddWrapperForSingleBufStore)
FACTORY_NAMESPACES = {"tilelang.": "tl", "tvm.": "tir"}


def identity_of(row) -> str:
    """A row's pass identity: its ``pass_id``, or its ``pass`` where it has none (a row that is no pass run, a
    table or frame made without the column; pandas' missing value included)."""
    identity = row.get("pass_id")
    return identity if isinstance(identity, str) and identity else str(row["pass"])


def is_factory(identity: str) -> bool:
    """Whether IDENTITY names an anonymous function pass by its factory."""
    return str(identity).startswith(FACTORY_PACKAGES)


def short_name(identity: str) -> str:
    """The part after the last dot (the run record's spelling of a named pass, a factory's own name); an
    identity by place (``pass_fn@file:line``) stays whole: it has no shorter form."""
    identity = str(identity)
    return identity if "@" in identity else identity.rsplit(".", 1)[-1]


def alignment_key(identity: str) -> str:
    """What pairs one pass across releases: TVM's full name with its renamed namespaces as one, and a factory as
    the name its pass gets once a release names it. ``tirx.Simplify`` and ``tir.Simplify`` pair, as do
    ``tilelang.transform.AddWrapperForSingleBufStore`` and ``tl.AddWrapperForSingleBufStore``; ``tl.Simplify`` and
    ``tirx.Simplify`` never do."""
    identity = str(identity)
    for package, namespace in FACTORY_NAMESPACES.items():
        if identity.startswith(package):
            return f"{namespace}.{short_name(identity)}"
    namespace, dot, name = identity.partition(".")
    return f"{NAMESPACE_ALIASES.get(namespace, namespace)}.{name}" if dot else identity


def renamed_note(old_identity: str, new_identity: str, new_release: str) -> str:
    """How one pass paired across two releases changed its identity ("" when it did not): "named in 0.1.15"
    when the older release ran it anonymously."""
    if str(old_identity) == str(new_identity):
        return ""
    if is_factory(old_identity) and not is_factory(new_identity):
        return f"named {new_identity} in {new_release}"
    if is_factory(new_identity) and not is_factory(old_identity):
        return f"anonymous in {new_release} (made by {new_identity})"
    return f"{new_identity} in {new_release}"


def display_names(identities) -> dict[str, str]:
    """{identity: the label to show}: the short name where no other identity among IDENTITIES shares it, the
    full identity where one does (``tl.Simplify`` and ``tirx.Simplify`` beside each other; ``Simplify`` alone)."""
    identities = list(dict.fromkeys(str(identity) for identity in identities))
    sharing: dict[str, int] = {}
    for identity in identities:
        sharing[short_name(identity)] = sharing.get(short_name(identity), 0) + 1
    return {
        identity: short_name(identity) if sharing[short_name(identity)] == 1 else identity for identity in identities
    }


def matches(given: str, identity: str, spelling: str | None = None) -> bool:
    """Whether a name a user gave (a config's ``knockout.passes``) names the pass IDENTITY, spelt SPELLING in the
    ``pass`` column: the identity itself or its name in another release (``tir.Simplify`` is 0.1.15's
    ``tirx.Simplify``), its short name (``Simplify`` names both ``tl.Simplify`` and ``tirx.Simplify``), or the run
    record's spelling (``pass_fn`` names every anonymous pass). A name that matches several identities is one
    knockout variant per identity (pass_knockout.plan_variants)."""
    given = str(given)
    if given in (str(identity), spelling):
        return True
    if "@" in given:
        return False
    return alignment_key(given) == alignment_key(identity) if "." in given else given == short_name(identity)
