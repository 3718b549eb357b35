"""What a definition is in each language read with tree-sitter: rules as data.

Each :class:`Rules` names the syntax nodes that define something (and the
kind of node they make), the nodes walked through at the same level (blocks,
``export``, declaration lists), the nodes that belong to the definition after
them (decorators, Rust attributes), and, for the few definitions whose name is
not their ``name`` field, how to name them.  :mod:`.treesitter` applies them.

Qualified names, per language (``docs/cli.md`` has the table):

* TypeScript and JavaScript: functions, classes, methods (``Class.method``,
  getters and setters binding one name), class fields and ``const``/``let``/
  ``var`` bound to an arrow function, function expression or class;
  TypeScript's interfaces and their methods, enums, type aliases, overload
  signatures (bound with their implementation) and namespaces (``N.M.f``).
  Anonymous definitions (``export default function () {}``, callbacks,
  object literals' methods) make no node.
* Go: functions, types (``struct``, ``interface`` and their methods, others),
  and methods with a receiver as ``Type.Method``, pointer or not, generic or
  not.  A type's text is its own declaration: Go lets its methods live in any
  file of the package, so they are not part of it.
* Rust: functions, structs, enums, unions, traits and their methods, modules
  (``m.f``), type aliases and ``macro_rules!``.  ``impl Type { fn m }`` binds
  ``Type`` and makes ``Type.m``, so a type's node covers its declaration and
  its inherent ``impl`` blocks in the file, as a Python class covers its
  body.  ``impl Trait for Type`` makes ``Type.Trait`` (the trait's last path
  segment, without generic arguments) and ``Type.Trait.method``: ``Display``
  and ``Debug`` both have a ``fmt``, and each is its own node.
* Java: classes, interfaces, enums, records and annotation types, nested
  (``Outer.Inner.method``); methods and constructors (``Type.Type``);
  overloads bind one name and so cover each other.

A function bound directly in a type (class, interface, struct, trait,
``impl``, enum, record) is a ``method``, as in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from roteiro_memory.repo.binding import IMPL
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["RULES", "TYPE_KINDS", "Named", "Rules"]

Named = tuple[str, str] | None
"""A definition's name and kind, or None: the node defines nothing after all."""

Namer = Callable[["Node", str], Named]
"""Names a definition node whose name is not its ``name`` field, given the kind
its node type makes."""

TYPE_KINDS = frozenset(
    {"class", "interface", "struct", "trait", IMPL, "enum", "record", "union", "annotation"}
)
"""Kinds whose directly bound functions are methods."""


@valueclass
class Rules:
    """How definitions are found in one grammar's syntax trees."""

    defines: Mapping[str, str]
    """Node type -> the kind of node it defines."""
    bodies: frozenset[str]
    """Node types walked through: what is defined in them is bound at the
    level they are at."""
    values: frozenset[str] = frozenset()
    """Node types walked through only as a definition's own part (the arrow
    function a ``const`` is bound to), never on their own."""
    leading: frozenset[str] = frozenset()
    """Node types that belong to the definition right after them, or that
    its own node begins with, comments among them allowed but no part of
    its text (decorators, attributes, Java's modifiers holding its
    annotations)."""
    namers: Mapping[str, Namer] = {}
    """Node types named otherwise than by their ``name`` field."""

    def named(self, node: Node) -> Named:
        """The name and kind ``node`` defines, or None when it defines nothing."""
        kind = self.defines.get(node.type)
        if kind is None:
            return None
        namer = self.namers.get(node.type)
        if namer is not None:
            return namer(node, kind)
        name = _name(node.child_by_field_name("name"))
        return (name, kind) if name else None


def _text(node: Node | None) -> str:
    """The source of ``node``, whitespace runs made one space (a name such
    as ``N.M`` or ``From<T>`` may span lines)."""
    if node is None or node.text is None:
        return ""
    return " ".join(node.text.decode("utf-8", "replace").split())


def _name(node: Node | None) -> str:
    """An identifier's text; a quoted name (``'my-method'() {}``,
    ``declare module "x"``) without its quotes."""
    text = _text(node)
    if node is not None and node.type == "string" and len(text) >= 2:
        return text[1:-1]
    return text


_WRAPPERS = frozenset(
    {
        "pointer_type",
        "reference_type",
        "generic_type",
        "qualified_type",
        "scoped_type_identifier",
        "parenthesized_type",
    }
)


def _base_type(node: Node | None) -> str:
    """The name a type expression is about: ``*List[T]`` -> ``List``,
    ``&fmt::Display`` -> ``Display``, ``From<T>`` -> ``From``; any other type
    (a tuple, an array) as written."""
    while node is not None and node.type in _WRAPPERS:
        inner = node.child_by_field_name("name") or node.child_by_field_name("type")
        if inner is None:
            inner = node.named_children[0] if node.named_children else None
        node = inner
    return _text(node)


# --- TypeScript and JavaScript --------------------------------------------------

_ES_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "class"}
)
_ES_NAMES = frozenset({"identifier", "property_identifier", "private_property_identifier"})


def _es_bound(node: Node, kind: str) -> Named:
    """A variable or class field bound to a function or class: named by its
    ``name`` (TypeScript) or ``property`` (JavaScript) field."""
    value = node.child_by_field_name("value")
    if value is None or value.type not in _ES_VALUES:
        return None
    name = node.child_by_field_name("name") or node.child_by_field_name("property")
    if name is None or name.type not in _ES_NAMES:
        return None  # a destructuring pattern binds no one name
    return _name(name), "class" if value.type == "class" else kind


ECMASCRIPT = Rules(
    defines={
        "function_declaration": "function",
        "generator_function_declaration": "function",
        "function_signature": "function",
        "class_declaration": "class",
        "abstract_class_declaration": "class",
        "method_definition": "function",
        "method_signature": "function",
        "abstract_method_signature": "function",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "type_alias_declaration": "type",
        "internal_module": "namespace",
        "module": "namespace",
        "variable_declarator": "function",
        "public_field_definition": "function",
        "field_definition": "function",
    },
    bodies=frozenset(
        {
            "program",
            "statement_block",
            "class_body",
            "interface_body",
            "object_type",
            "export_statement",
            "lexical_declaration",
            "variable_declaration",
            "expression_statement",
            "ambient_declaration",
            "if_statement",
            "else_clause",
            "try_statement",
            "catch_clause",
            "finally_clause",
        }
    ),
    values=_ES_VALUES,
    leading=frozenset({"decorator"}),
    namers={
        "variable_declarator": _es_bound,
        "public_field_definition": _es_bound,
        "field_definition": _es_bound,
    },
)

# --- Go -------------------------------------------------------------------------


def _go_method(node: Node, kind: str) -> Named:
    """``func (l *List[T]) Push`` -> ``List.Push``."""
    receiver = node.child_by_field_name("receiver")
    name = _name(node.child_by_field_name("name"))
    types = [
        _base_type(p.child_by_field_name("type"))
        for p in (receiver.named_children if receiver is not None else ())
        if p.type == "parameter_declaration"
    ]
    return (f"{types[0]}.{name}" if types and types[0] else name), kind


_GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}


def _go_type(node: Node, kind: str) -> Named:
    """A type is a ``struct``, an ``interface`` or (anything else) a ``type``."""
    shape = node.child_by_field_name("type")
    made = _GO_TYPE_KINDS.get(shape.type, kind) if shape is not None else kind
    return _name(node.child_by_field_name("name")), made


GO = Rules(
    defines={
        "function_declaration": "function",
        "method_declaration": "method",
        "type_spec": "type",
        "type_alias": "type",
        "method_elem": "function",
    },
    bodies=frozenset(
        {"source_file", "type_declaration", "interface_type", "block", "statement_list"}
    ),
    namers={"method_declaration": _go_method, "type_spec": _go_type},
)

# --- Rust -----------------------------------------------------------------------


def _rust_impl(node: Node, kind: str) -> Named:
    """``impl<T> S<T>`` -> ``S``; ``impl fmt::Display for S`` -> ``S.Display``."""
    owner = _base_type(node.child_by_field_name("type"))
    trait = node.child_by_field_name("trait")
    return (f"{owner}.{_base_type(trait)}" if trait is not None else owner), kind


RUST = Rules(
    defines={
        "function_item": "function",
        "function_signature_item": "function",
        "struct_item": "struct",
        "enum_item": "enum",
        "union_item": "union",
        "trait_item": "trait",
        "impl_item": IMPL,
        "mod_item": "module",
        "type_item": "type",
        "macro_definition": "macro",
    },
    bodies=frozenset({"source_file", "declaration_list", "block", "foreign_mod_item"}),
    leading=frozenset({"attribute_item"}),
    namers={"impl_item": _rust_impl},
)

# --- Java -----------------------------------------------------------------------

JAVA = Rules(
    defines={
        "class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "record",
        "annotation_type_declaration": "annotation",
        "method_declaration": "function",
        "constructor_declaration": "function",
        "compact_constructor_declaration": "function",
        "annotation_type_element_declaration": "function",
    },
    bodies=frozenset(
        {
            "program",
            "class_body",
            "interface_body",
            "enum_body",
            "enum_body_declarations",
            "annotation_type_body",
            "block",
            "constructor_body",
        }
    ),
    leading=frozenset({"modifiers"}),
)

RULES: Mapping[str, Rules] = {
    "TypeScript": ECMASCRIPT,
    "JavaScript": ECMASCRIPT,
    "Go": GO,
    "Rust": RUST,
    "Java": JAVA,
}
"""Each language of :data:`~roteiro_memory.repo.languages.LANGUAGES` but Python, by name."""
