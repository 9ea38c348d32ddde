//! The languages and, per language, which syntax nodes are symbols, containers or transparent
//! wrappers.

use std::hash::{Hash as _, Hasher as _};

use tree_sitter::Node;

use super::{Kind, Symbol};

/// A language `diff.semantic` can parse (when its cargo feature is on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// Rust (`.rs`).
    Rust,
    /// Python (`.py`, `.pyi`).
    Python,
    /// JavaScript with JSX (`.js`, `.mjs`, `.cjs`, `.jsx`).
    JavaScript,
    /// TypeScript (`.ts`, `.mts`, `.cts`).
    TypeScript,
    /// TypeScript with JSX (`.tsx`).
    Tsx,
    /// Go (`.go`).
    Go,
    /// Java (`.java`).
    Java,
    /// C (`.c`, `.h`).
    C,
    /// C++ (`.cc`, `.cpp`, `.cxx`, `.hpp`, `.hh`, ...).
    Cpp,
}

impl Language {
    /// The language of `path`: from `attribute` when given (the value of `linguist-language`, else
    /// of `diff`, matched without regard to case), else from the extension. `None` for a language
    /// this build has no grammar for.
    pub fn detect(path: &str, attribute: Option<&str>) -> Option<Language> {
        let by_extension = Self::by_extension(path);
        let language = match attribute.map(str::to_ascii_lowercase).as_deref() {
            Some("rust") => Some(Language::Rust),
            Some("python") => Some(Language::Python),
            Some("javascript" | "js" | "jsx") => Some(Language::JavaScript),
            Some("typescript" | "ts") => Some(Language::TypeScript),
            Some("tsx") => Some(Language::Tsx),
            Some("go" | "golang") => Some(Language::Go),
            Some("java") => Some(Language::Java),
            Some("c") => Some(Language::C),
            // Git's `cpp` diff driver serves C as well as C++: the extension tells them apart.
            Some("cpp") if by_extension == Some(Language::C) => Some(Language::C),
            Some("c++" | "cpp") => Some(Language::Cpp),
            // Another diff driver or language name: the extension decides.
            Some(_) => by_extension,
            None => by_extension,
        };
        language.filter(|language| language.grammar().is_some())
    }

    fn by_extension(path: &str) -> Option<Language> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let extension = name.rsplit_once('.').map(|(_, extension)| extension.to_ascii_lowercase())?;
        Some(match extension.as_str() {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" => Language::Go,
            "java" => Language::Java,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp" | "inl" => Language::Cpp,
            _ => return None,
        })
    }

    /// The tree-sitter grammar, or `None` when this build leaves the language's feature out.
    pub(super) fn grammar(self) -> Option<tree_sitter::Language> {
        match self {
            #[cfg(feature = "lang-rust")]
            Language::Rust => Some(tree_sitter_rust::LANGUAGE.into()),
            #[cfg(feature = "lang-python")]
            Language::Python => Some(tree_sitter_python::LANGUAGE.into()),
            #[cfg(feature = "lang-javascript")]
            Language::JavaScript => Some(tree_sitter_javascript::LANGUAGE.into()),
            #[cfg(feature = "lang-typescript")]
            Language::TypeScript => Some(tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()),
            #[cfg(feature = "lang-typescript")]
            Language::Tsx => Some(tree_sitter_typescript::LANGUAGE_TSX.into()),
            #[cfg(feature = "lang-go")]
            Language::Go => Some(tree_sitter_go::LANGUAGE.into()),
            #[cfg(feature = "lang-java")]
            Language::Java => Some(tree_sitter_java::LANGUAGE.into()),
            #[cfg(feature = "lang-c")]
            Language::C => Some(tree_sitter_c::LANGUAGE.into()),
            #[cfg(feature = "lang-cpp")]
            Language::Cpp => Some(tree_sitter_cpp::LANGUAGE.into()),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The separator of qualified names: `::` in Rust and C++, `.` elsewhere.
    fn separator(self) -> &'static str {
        match self {
            Language::Rust | Language::Cpp => "::",
            _ => ".",
        }
    }
}

/// What a syntax node is to the walk.
enum Rule<'tree> {
    /// Not a symbol; its lines are top level unless a symbol holds them.
    Skip,
    /// Its named children are visited as if they stood in its place (`#ifdef` blocks,
    /// `extern "C"`).
    Transparent,
    /// It wraps one declaration and lends it its lines (`export`, decorators, `template<...>`).
    Wrapper(Node<'tree>),
    /// Several declarations in one statement (`const a = 1, b = 2`): each is a symbol of its own,
    /// with the statement's lines when it is the only one.
    Each(Vec<Declared<'tree>>),
    /// A symbol.
    Symbol(Declared<'tree>),
}

/// A declaration found by a rule.
struct Declared<'tree> {
    kind: Kind,
    /// Its own name (qualified already when the source qualifies it, as C++ `Foo::bar`).
    name: String,
    /// The node whose lines and text it has.
    node: Node<'tree>,
    /// Its body, which ends its signature.
    body: Option<Node<'tree>>,
    /// For a container: the node whose children are its members, and the prefix of their names.
    members: Option<(Node<'tree>, String)>,
}

/// The walk over one tree.
struct Walk<'src, 'tree> {
    language: Language,
    text: &'src [u8],
    out: Vec<Symbol>,
    /// What is left to do, the next task last.
    stack: Vec<Task<'tree>>,
}

/// The container a walk is in.
#[derive(Clone)]
struct Scope {
    prefix: Option<String>,
    parent: Option<usize>,
    /// How many containers and transparent wrappers hold it.
    depth: usize,
}

impl Scope {
    /// The same scope one transparent wrapper deeper.
    fn deeper(&self) -> Self {
        Self { depth: self.depth + 1, ..self.clone() }
    }
}

/// Deepest nesting of containers and transparent wrappers (`mod` in `mod`, `#if` in `#if`) the walk
/// follows: 128 levels, far beyond real code. A deeper file falls back to the text diff
/// ([`TooDeep`]): its qualified names alone would cost quadratic memory.
pub(crate) const MAX_DEPTH: usize = 128;

/// A file nests containers deeper than [`MAX_DEPTH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooDeep;

/// Lists the symbols under `root` (see the module docs of `semantic`).
///
/// The walk keeps its own stack of work, so a file's nesting never nests calls: 2,000 nested
/// `mod`s overflowed the stack of the thread that walked them when each level was a call.
///
/// # Errors
/// [`TooDeep`] when containers nest deeper than [`MAX_DEPTH`].
pub(super) fn symbols(language: Language, root: Node<'_>, text: &[u8]) -> Result<Vec<Symbol>, TooDeep> {
    let mut walk = Walk { language, text, out: Vec::new(), stack: Vec::new() };
    walk.children(root, &Scope { prefix: None, parent: None, depth: 0 })?;
    while let Some(task) = walk.stack.pop() {
        match task {
            Task::Visit { node, outer, scope } => walk.visit(node, outer, &scope)?,
            Task::Push { declared, outer, scope } => walk.push(declared, outer, &scope)?,
        }
    }
    Ok(walk.out)
}

/// What is left to do of a walk, in the order a recursive walk would do it (the stack's top first).
enum Task<'tree> {
    /// [`Walk::visit`] a node whose lines start where `outer` starts.
    Visit { node: Node<'tree>, outer: Node<'tree>, scope: Scope },
    /// [`Walk::push`] a declaration.
    Push { declared: Declared<'tree>, outer: Node<'tree>, scope: Scope },
}

impl<'src, 't> Walk<'src, 't> {
    /// Schedules the named children of `node`, in order, in `scope`.
    fn children(&mut self, node: Node<'t>, scope: &Scope) -> Result<(), TooDeep> {
        if scope.depth > MAX_DEPTH {
            return Err(TooDeep);
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        self.stack.extend(children.into_iter().rev().map(|child| Task::Visit {
            node: child,
            outer: child,
            scope: scope.clone(),
        }));
        Ok(())
    }

    /// Visits `node`, whose lines start where `outer` (a wrapper, or `node` itself) starts.
    fn visit(&mut self, node: Node<'t>, outer: Node<'t>, scope: &Scope) -> Result<(), TooDeep> {
        match self.rule(node, scope) {
            Rule::Skip => {}
            Rule::Transparent => self.children(node, &scope.deeper())?,
            Rule::Wrapper(inner) => self.stack.push(Task::Visit { node: inner, outer, scope: scope.clone() }),
            Rule::Symbol(declared) => self.push(declared, outer, scope)?,
            Rule::Each(declared) => {
                let alone = declared.len() == 1;
                let tasks: Vec<Task<'t>> = declared
                    .into_iter()
                    .map(|one| {
                        let lines = if alone { outer } else { one.node };
                        Task::Push { declared: one, outer: lines, scope: scope.clone() }
                    })
                    .collect();
                self.stack.extend(tasks.into_iter().rev());
            }
        }
        Ok(())
    }

    fn push(&mut self, declared: Declared<'t>, outer: Node<'t>, scope: &Scope) -> Result<(), TooDeep> {
        let name = collapse(&declared.name);
        if name.is_empty() {
            return Ok(());
        }
        let qualified = match &scope.prefix {
            Some(prefix) => format!("{prefix}{}{name}", self.language.separator()),
            None => name.clone(),
        };
        let start = outer.start_byte().min(declared.node.start_byte());
        let end = outer.end_byte().max(declared.node.end_byte());
        let signature = declared.body.map(|body| collapse(&self.slice(declared.node.start_byte(), body.start_byte())));
        let leaf = name.rsplit(self.language.separator()).next().unwrap_or(&name).to_owned();
        let index = self.out.len();
        self.out.push(Symbol {
            kind: declared.kind,
            name: qualified.clone(),
            leaf,
            start_line: line_of(outer.start_position().min(declared.node.start_position())),
            end_line: end_line(outer.end_position().max(declared.node.end_position())),
            signature,
            bytes: start..end,
            parent: scope.parent,
        });
        if let Some((members, prefix)) = declared.members {
            let prefix = match &scope.prefix {
                Some(outer_prefix) => format!("{outer_prefix}{}{}", self.language.separator(), collapse(&prefix)),
                None => collapse(&prefix),
            };
            self.children(members, &Scope { prefix: Some(prefix), parent: Some(index), depth: scope.depth + 1 })?;
        }
        Ok(())
    }

    fn slice(&self, start: usize, end: usize) -> String {
        String::from_utf8_lossy(&self.text[start..end.max(start)]).into_owned()
    }

    fn text_of(&self, node: Option<Node<'_>>) -> String {
        node.map(|node| self.slice(node.start_byte(), node.end_byte())).unwrap_or_default()
    }

    fn field_text(&self, node: Node<'_>, field: &str) -> String {
        self.text_of(node.child_by_field_name(field))
    }

    /// A plain declaration: its name from the `name` field, its body from the `body` field.
    fn named<'tree>(&self, node: Node<'tree>, kind: Kind) -> Rule<'tree> {
        let name = self.field_text(node, "name");
        Rule::Symbol(Declared { kind, name, node, body: node.child_by_field_name("body"), members: None })
    }

    /// A container: [`Self::named`], with the `body` field's children as its members.
    fn container<'tree>(&self, node: Node<'tree>, kind: Kind) -> Rule<'tree> {
        let name = self.field_text(node, "name");
        let body = node.child_by_field_name("body");
        let members = body.map(|body| (body, name.clone()));
        Rule::Symbol(Declared { kind, name, node, body, members })
    }

    fn rule<'tree>(&self, node: Node<'tree>, scope: &Scope) -> Rule<'tree> {
        match self.language {
            Language::Rust => self.rust(node),
            Language::Python => self.python(node, scope),
            Language::JavaScript | Language::TypeScript | Language::Tsx => self.javascript(node, scope),
            Language::Go => self.go(node),
            Language::Java => self.java(node),
            Language::C | Language::Cpp => self.c(node),
        }
    }

    fn rust<'tree>(&self, node: Node<'tree>) -> Rule<'tree> {
        match node.kind() {
            "function_item" | "function_signature_item" => self.named(node, Kind::Fn),
            "struct_item" => self.named(node, Kind::Struct),
            "enum_item" => self.named(node, Kind::Enum),
            "union_item" => self.named(node, Kind::Union),
            "const_item" | "static_item" => self.named(node, Kind::Const),
            "type_item" => self.named(node, Kind::Type),
            "macro_definition" => self.named(node, Kind::Macro),
            "trait_item" => self.container(node, Kind::Trait),
            "mod_item" => self.container(node, Kind::Mod),
            "impl_item" => {
                let ty = collapse(&self.field_text(node, "type"));
                let body = node.child_by_field_name("body");
                let (name, prefix) = match node.child_by_field_name("trait") {
                    Some(trait_node) => {
                        let trait_name = collapse(&self.text_of(Some(trait_node)));
                        (format!("{trait_name} for {ty}"), format!("<{ty} as {trait_name}>"))
                    }
                    None => (ty.clone(), ty),
                };
                Rule::Symbol(Declared { kind: Kind::Impl, name, node, body, members: body.map(|body| (body, prefix)) })
            }
            _ => Rule::Skip,
        }
    }

    fn python<'tree>(&self, node: Node<'tree>, scope: &Scope) -> Rule<'tree> {
        match node.kind() {
            "function_definition" => self.named(node, Kind::Fn),
            "class_definition" => self.container(node, Kind::Class),
            "decorated_definition" => node.child_by_field_name("definition").map_or(Rule::Skip, Rule::Wrapper),
            // Definitions under `if TYPE_CHECKING:` or `try:` at the top level or in a class.
            "if_statement" | "try_statement" | "else_clause" | "elif_clause" | "except_clause" | "finally_clause"
            | "block" => Rule::Transparent,
            "expression_statement" if scope.parent.is_none() => {
                let mut cursor = node.walk();
                let declared = node
                    .named_children(&mut cursor)
                    .filter(|child| child.kind() == "assignment")
                    .filter_map(|assignment| {
                        let name = self
                            .text_of(assignment.child_by_field_name("left").filter(|left| left.kind() == "identifier"));
                        let constant = !name.is_empty()
                            && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                            && name.chars().any(|c| c.is_ascii_uppercase());
                        constant.then_some(Declared {
                            kind: Kind::Const,
                            name,
                            node: assignment,
                            body: None,
                            members: None,
                        })
                    })
                    .collect::<Vec<_>>();
                if declared.is_empty() { Rule::Skip } else { Rule::Each(declared) }
            }
            _ => Rule::Skip,
        }
    }

    fn javascript<'tree>(&self, node: Node<'tree>, scope: &Scope) -> Rule<'tree> {
        match node.kind() {
            "function_declaration" | "generator_function_declaration" | "function_signature" => {
                self.named(node, Kind::Fn)
            }
            "method_definition" | "abstract_method_signature" => self.named(node, Kind::Fn),
            "class_declaration" | "abstract_class_declaration" | "class" => self.container(node, Kind::Class),
            "interface_declaration" => self.named(node, Kind::Interface),
            "type_alias_declaration" => self.named(node, Kind::Type),
            "enum_declaration" => self.named(node, Kind::Enum),
            "internal_module" => self.container(node, Kind::Namespace),
            "module" => self.container(node, Kind::Mod),
            "export_statement" => node.child_by_field_name("declaration").map_or(Rule::Skip, Rule::Wrapper),
            "ambient_declaration" | "statement_block" => Rule::Transparent,
            "expression_statement" => {
                // A TypeScript `namespace X {}` statement parses as an expression statement around the module.
                let mut cursor = node.walk();
                let inner = node.named_children(&mut cursor).find(|child| child.kind() == "internal_module");
                inner.map_or(Rule::Skip, Rule::Wrapper)
            }
            "lexical_declaration" | "variable_declaration" if scope.parent.is_none() || scope.prefix.is_some() => {
                let constant = node.child(0).is_some_and(|first| first.kind() == "const");
                let mut cursor = node.walk();
                let declared = node
                    .named_children(&mut cursor)
                    .filter(|child| child.kind() == "variable_declarator")
                    .filter_map(|declarator| {
                        let name_node =
                            declarator.child_by_field_name("name").filter(|name| name.kind() == "identifier")?;
                        let value = declarator.child_by_field_name("value");
                        let function = value.filter(|value| {
                            matches!(
                                value.kind(),
                                "arrow_function" | "function_expression" | "function" | "generator_function"
                            )
                        });
                        let kind = match (function, constant) {
                            (Some(_), _) => Kind::Fn,
                            (None, true) => Kind::Const,
                            (None, false) => return None,
                        };
                        let body = function.and_then(|function| function.child_by_field_name("body"));
                        Some(Declared {
                            kind,
                            name: self.text_of(Some(name_node)),
                            node: declarator,
                            body,
                            members: None,
                        })
                    })
                    .collect::<Vec<_>>();
                if declared.is_empty() { Rule::Skip } else { Rule::Each(declared) }
            }
            _ => Rule::Skip,
        }
    }

    fn go<'tree>(&self, node: Node<'tree>) -> Rule<'tree> {
        match node.kind() {
            "function_declaration" => self.named(node, Kind::Fn),
            "method_declaration" => {
                let receiver = node.child_by_field_name("receiver");
                let mut receiver_type = String::new();
                if let Some(receiver) = receiver {
                    let mut cursor = receiver.walk();
                    let parameter =
                        receiver.named_children(&mut cursor).find(|child| child.kind() == "parameter_declaration");
                    receiver_type = self.field_text_or_empty(parameter, "type");
                }
                let receiver_type =
                    receiver_type.trim_start_matches('*').split('[').next().unwrap_or("").trim().to_owned();
                let method = self.field_text(node, "name");
                let name = if receiver_type.is_empty() { method } else { format!("{receiver_type}.{method}") };
                Rule::Symbol(Declared {
                    kind: Kind::Fn,
                    name,
                    node,
                    body: node.child_by_field_name("body"),
                    members: None,
                })
            }
            "type_declaration" => {
                let mut cursor = node.walk();
                let declared = node
                    .named_children(&mut cursor)
                    .filter(|child| matches!(child.kind(), "type_spec" | "type_alias"))
                    .map(|spec| {
                        let kind = match spec.child_by_field_name("type").map(|ty| ty.kind()) {
                            Some("struct_type") => Kind::Struct,
                            Some("interface_type") => Kind::Interface,
                            _ => Kind::Type,
                        };
                        Declared {
                            kind,
                            name: self.field_text(spec, "name"),
                            node: spec,
                            body: spec.child_by_field_name("type"),
                            members: None,
                        }
                    })
                    .collect();
                Rule::Each(declared)
            }
            "const_declaration" => {
                let mut cursor = node.walk();
                let declared = node
                    .named_children(&mut cursor)
                    .filter(|child| child.kind() == "const_spec")
                    .map(|spec| {
                        let mut names_cursor = spec.walk();
                        let names: Vec<String> = spec
                            .children_by_field_name("name", &mut names_cursor)
                            .map(|name| self.text_of(Some(name)))
                            .collect();
                        Declared { kind: Kind::Const, name: names.join(", "), node: spec, body: None, members: None }
                    })
                    .collect();
                Rule::Each(declared)
            }
            _ => Rule::Skip,
        }
    }

    fn field_text_or_empty(&self, node: Option<Node<'_>>, field: &str) -> String {
        node.map(|node| self.field_text(node, field)).unwrap_or_default()
    }

    fn java<'tree>(&self, node: Node<'tree>) -> Rule<'tree> {
        match node.kind() {
            "class_declaration" | "record_declaration" => self.container(node, Kind::Class),
            "interface_declaration" | "annotation_type_declaration" => self.container(node, Kind::Interface),
            "enum_declaration" => self.container(node, Kind::Enum),
            "enum_body_declarations" => Rule::Transparent,
            "method_declaration" | "constructor_declaration" | "compact_constructor_declaration" => {
                self.named(node, Kind::Fn)
            }
            _ => Rule::Skip,
        }
    }

    fn c<'tree>(&self, node: Node<'tree>) -> Rule<'tree> {
        match node.kind() {
            "function_definition" => {
                let name = declarator_name(self, node.child_by_field_name("declarator"));
                Rule::Symbol(Declared {
                    kind: Kind::Fn,
                    name,
                    node,
                    body: node.child_by_field_name("body"),
                    members: None,
                })
            }
            "struct_specifier" | "union_specifier" | "enum_specifier" | "class_specifier"
                if node.child_by_field_name("body").is_some() =>
            {
                let kind = match node.kind() {
                    "struct_specifier" => Kind::Struct,
                    "union_specifier" => Kind::Union,
                    "enum_specifier" => Kind::Enum,
                    _ => Kind::Class,
                };
                if kind == Kind::Enum { self.named(node, kind) } else { self.container(node, kind) }
            }
            "declaration" | "type_definition" => {
                let specifier = node
                    .child_by_field_name("type")
                    .filter(|ty| ty.child_by_field_name("body").is_some() && ty.kind().ends_with("_specifier"));
                match specifier {
                    Some(specifier) if !self.field_text(specifier, "name").is_empty() => Rule::Wrapper(specifier),
                    // An anonymous `typedef struct { ... } name;` takes the typedef's name.
                    Some(specifier) if node.kind() == "type_definition" => {
                        let kind = match specifier.kind() {
                            "union_specifier" => Kind::Union,
                            "enum_specifier" => Kind::Enum,
                            _ => Kind::Struct,
                        };
                        let name = declarator_name(self, node.child_by_field_name("declarator"));
                        let body = specifier.child_by_field_name("body");
                        let members = body.filter(|_| kind != Kind::Enum).map(|body| (body, name.clone()));
                        Rule::Symbol(Declared { kind, name, node, body, members })
                    }
                    _ if node.kind() == "type_definition" => {
                        let name = declarator_name(self, node.child_by_field_name("declarator"));
                        Rule::Symbol(Declared { kind: Kind::Type, name, node, body: None, members: None })
                    }
                    _ => Rule::Skip,
                }
            }
            "alias_declaration" => self.named(node, Kind::Type),
            "preproc_def" => self.named(node, Kind::Const),
            "preproc_function_def" => self.named(node, Kind::Macro),
            "namespace_definition" => {
                let name = self.field_text(node, "name");
                let name = if name.is_empty() { "(anonymous)".to_owned() } else { name };
                let body = node.child_by_field_name("body");
                Rule::Symbol(Declared {
                    kind: Kind::Namespace,
                    name: name.clone(),
                    node,
                    body,
                    members: body.map(|body| (body, name)),
                })
            }
            "template_declaration" => {
                let mut cursor = node.walk();
                let inner =
                    node.named_children(&mut cursor).filter(|child| child.kind() != "template_parameter_list").last();
                inner.map_or(Rule::Skip, Rule::Wrapper)
            }
            "linkage_specification" => match node.child_by_field_name("body") {
                Some(body) if body.kind() == "declaration_list" => Rule::Transparent,
                Some(body) => Rule::Wrapper(body),
                None => Rule::Skip,
            },
            "declaration_list" | "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif"
            | "preproc_elifdef" => Rule::Transparent,
            _ => Rule::Skip,
        }
    }
}

/// The name a C or C++ declarator declares: through pointers, references, parentheses and function
/// declarators down to the identifier (qualified as written, e.g. `Foo::bar`).
fn declarator_name(walk: &Walk<'_, '_>, mut declarator: Option<Node<'_>>) -> String {
    while let Some(node) = declarator {
        match node.kind() {
            "identifier"
            | "field_identifier"
            | "type_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name"
            | "template_function"
            | "primitive_type" => return walk.text_of(Some(node)),
            _ => {
                declarator = node.child_by_field_name("declarator").or_else(|| {
                    let mut cursor = node.walk();
                    node.named_children(&mut cursor)
                        .find(|child| child.kind().ends_with("declarator") || child.kind() == "identifier")
                });
            }
        }
    }
    String::new()
}

/// `text` with every run of whitespace turned into one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn line_of(point: tree_sitter::Point) -> u32 {
    u32::try_from(point.row + 1).unwrap_or(u32::MAX)
}

/// The last line a node covers: a node that ends at the start of a line (column 0) ends on the line
/// before.
fn end_line(point: tree_sitter::Point) -> u32 {
    let row = if point.column == 0 && point.row > 0 { point.row - 1 } else { point.row };
    u32::try_from(row + 1).unwrap_or(u32::MAX)
}

/// The sorted hashes of the tokens of `symbol` in `text`, the text it was parsed from (runs of
/// letters, digits and `_`, or single other characters; whitespace left out), without its own name.
pub(crate) fn tokens(symbol: &Symbol, text: &[u8]) -> Vec<u64> {
    let text = text.get(symbol.bytes.clone()).unwrap_or_default();
    let name = symbol.leaf.as_str();
    let mut out = Vec::new();
    let mut start = None;
    let hash = |token: &[u8]| {
        let mut hasher = rustc_hash::FxHasher::default();
        token.hash(&mut hasher);
        hasher.finish()
    };
    for (at, &byte) in text.iter().enumerate() {
        let word = byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80;
        match (word, start) {
            (true, None) => start = Some(at),
            (true, Some(_)) => {}
            (false, begun) => {
                if let Some(begin) = begun {
                    if &text[begin..at] != name.as_bytes() {
                        out.push(hash(&text[begin..at]));
                    }
                    start = None;
                }
                if !byte.is_ascii_whitespace() {
                    out.push(hash(&text[at..=at]));
                }
            }
        }
    }
    if let Some(begin) = start.filter(|begin| &text[*begin..] != name.as_bytes()) {
        out.push(hash(&text[begin..]));
    }
    out.sort_unstable();
    out
}
