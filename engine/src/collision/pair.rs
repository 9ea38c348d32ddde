//! One pair of lines of work: git's merge of their tips predicted in memory, and what both changed
//! since their merge base (files, base lines, symbols).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::merge::blob::builtin_driver::text::Labels;
use serde::Serialize;

use super::{MAX_PER_FILE, PairFile};
use crate::engine::{Engine, Repo};
use crate::error::{Error, Result};

/// A line's tip: the commit to merge, the HEAD it sits on, and the in-memory objects it needs.
#[derive(Debug, Clone)]
pub(crate) struct Tip {
    /// The commit HEAD or the branch names.
    pub(crate) head: ObjectId,
    /// The commit that stands for the line: `head`, or the in-memory commit of its uncommitted
    /// changes on top of it.
    pub(crate) commit: ObjectId,
    /// The in-memory objects of that commit, when it is one.
    pub(crate) objects: Option<Arc<Vec<Object>>>,
}

/// git's merge of two lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MergeVerdict {
    /// The merge stops with conflicts.
    Conflicted,
    /// The merge completes without conflicts.
    Clean,
    /// The first line is contained in the second: git would fast-forward it.
    FastForward,
    /// The second line is contained in the first: nothing to merge.
    UpToDate,
    /// No common history.
    UnrelatedHistories,
}

/// A pair's prediction, before its lines are named.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Predicted {
    pub(crate) merge: MergeVerdict,
    pub(crate) conflict_count: usize,
    /// Every file both changed (and every conflicted path), conflicted first, then by path.
    pub(crate) files: Vec<PairFile>,
}

impl Predicted {
    fn weight(&self) -> usize {
        64 + self
            .files
            .iter()
            .map(|file| 64 + file.path.len() + file.symbols.iter().map(String::len).sum::<usize>())
            .sum::<usize>()
    }
}

/// An object written only in memory: its id, kind and bytes.
pub(crate) type Object = (ObjectId, gix::objs::Kind, Vec<u8>);

/// The symbols changed in each file (path to qualified names).
type SymbolsByFile = BTreeMap<String, BTreeSet<String>>;

/// Predicts pairs on one in-memory store, made on the first prediction that is not kept.
pub(crate) struct Predictor<'a> {
    engine: &'a Engine,
    repo: &'a Repo,
    scratch: Option<gix::Repository>,
    loaded: HashSet<ObjectId>,
    /// Symbols changed per file, by (base, tip).
    symbols: HashMap<(ObjectId, ObjectId), Arc<SymbolsByFile>>,
}

impl<'a> Predictor<'a> {
    pub(crate) fn new(engine: &'a Engine, repo: &'a Repo) -> Self {
        Self { engine, repo, scratch: None, loaded: HashSet::new(), symbols: HashMap::new() }
    }

    /// The prediction of `a` and `b`, kept in the answer cache by their commits' ids.
    ///
    /// # Errors
    /// [`Error::GitRead`] when a commit or tree cannot be read or the merge fails.
    pub(crate) fn predict(&mut self, a: &Tip, b: &Tip) -> Result<Arc<Predicted>> {
        let variant = format!("collisions.pair\0{}\0{}", a.commit, b.commit);
        let (engine, repo) = (self.engine, self.repo);
        engine.answer(
            repo,
            &variant,
            None,
            |predicted: &Arc<Predicted>| predicted.weight(),
            || self.compute(a, b).map(Arc::new),
        )
    }

    fn scratch(&mut self, tips: [&Tip; 2]) -> Result<&gix::Repository> {
        if self.scratch.is_none() {
            self.scratch = Some(crate::conflict::preflight::scratch(&self.repo.git)?.0);
        }
        let scratch = self.scratch.as_mut().expect("set above");
        for tip in tips {
            let Some(objects) = &tip.objects else { continue };
            if !self.loaded.insert(tip.commit) {
                continue;
            }
            let mut memory = scratch.objects.take_object_memory().unwrap_or_default();
            for (id, kind, data) in objects.iter() {
                memory.insert(*id, (*kind, data.clone()));
            }
            scratch.objects.set_object_memory(memory);
        }
        Ok(scratch)
    }

    fn compute(&mut self, a: &Tip, b: &Tip) -> Result<Predicted> {
        let to_err = |err| Error::git("a pair's merge", err);
        let nothing = |merge| Predicted { merge, conflict_count: 0, files: Vec::new() };
        let bases = crate::ancestry::merge_bases(&self.repo.git, a.head, &[b.head])?;
        let Some(&base) = bases.first() else { return Ok(nothing(MergeVerdict::UnrelatedHistories)) };
        if bases.contains(&a.commit) {
            return Ok(nothing(MergeVerdict::FastForward));
        }
        if bases.contains(&b.commit) {
            return Ok(nothing(MergeVerdict::UpToDate));
        }
        let (conflicts, mut files) = {
            let scratch = self.scratch([a, b])?;
            let labels = Labels { ancestor: None, current: Some(b"a".as_bstr()), other: Some(b"b".as_bstr()) };
            let options = scratch.tree_merge_options().map_err(|err| Error::git("merge options", err))?;
            let mut outcome = scratch.merge_commits(a.commit, b.commit, labels, options.into()).map_err(to_err)?;
            let conflicts = crate::conflict::paths::path_conflicts(scratch, &mut outcome.tree_merge)?;
            let tree_of = |id: ObjectId| -> Result<gix::Tree<'_>> {
                scratch.find_commit(id).map_err(to_err)?.tree().map_err(to_err)
            };
            let (base_tree, a_tree, b_tree) = (tree_of(base)?, tree_of(a.commit)?, tree_of(b.commit)?);
            let changed = |new: &gix::Tree<'_>| -> Result<BTreeSet<String>> {
                let changes = scratch.diff_tree_to_tree(Some(&base_tree), Some(new), None).map_err(to_err)?;
                let mut paths = BTreeSet::new();
                for change in &changes {
                    paths.insert(crate::facets::utf8(change.location()));
                    paths.insert(crate::facets::utf8(change.source_location()));
                }
                Ok(paths)
            };
            let (in_a, in_b) = (changed(&a_tree)?, changed(&b_tree)?);
            let mut files: BTreeMap<String, PairFile> = BTreeMap::new();
            for path in in_a.intersection(&in_b) {
                let blob = |tree: &gix::Tree<'_>| -> Option<Vec<u8>> {
                    let entry = tree.lookup_entry_by_path(path.as_str()).ok().flatten()?;
                    if !entry.mode().is_blob() {
                        return None;
                    }
                    let object = scratch.find_object(entry.object_id()).ok()?;
                    Some(object.data.clone())
                };
                let lines = match (blob(&base_tree), blob(&a_tree), blob(&b_tree)) {
                    (Some(base), Some(ours), Some(theirs)) if !crate::file::is_binary(&base) => {
                        overlap(&base, &ours, &theirs)
                    }
                    _ => Vec::new(),
                };
                files.insert(path.clone(), PairFile { path: path.clone(), conflict: None, lines, symbols: Vec::new() });
            }
            for conflict in &conflicts {
                let file = files.entry(conflict.path.clone()).or_insert_with(|| PairFile {
                    path: conflict.path.clone(),
                    conflict: None,
                    lines: Vec::new(),
                    symbols: Vec::new(),
                });
                file.conflict = Some(conflict.kind);
            }
            (conflicts, files)
        };
        // The semantic diff resolves its sides by revision, which an in-memory commit is not: symbols are
        // compared between committed lines only.
        if !files.is_empty() && a.objects.is_none() && b.objects.is_none() {
            let ours = self.symbols(base, a.commit)?;
            let theirs = self.symbols(base, b.commit)?;
            for (path, file) in &mut files {
                if let (Some(ours), Some(theirs)) = (ours.get(path), theirs.get(path)) {
                    file.symbols = ours.intersection(theirs).take(MAX_PER_FILE).cloned().collect();
                }
            }
        }
        let mut files: Vec<PairFile> = files.into_values().collect();
        files.sort_by_key(|file| file.conflict.is_none());
        let merge = if conflicts.is_empty() { MergeVerdict::Clean } else { MergeVerdict::Conflicted };
        Ok(Predicted { merge, conflict_count: conflicts.len(), files })
    }

    /// The symbols each file changes between `base` and `tip`, by qualified name (the semantic
    /// diff of the two, its parses kept in the engine).
    fn symbols(&mut self, base: ObjectId, tip: ObjectId) -> Result<Arc<BTreeMap<String, BTreeSet<String>>>> {
        if let Some(found) = self.symbols.get(&(base, tip)) {
            return Ok(found.clone());
        }
        let scratch = self.scratch.as_ref().expect("made by the merge");
        let options = crate::diff::semantic::Options {
            base: Some(base.to_string()),
            head: Some(tip.to_string()),
            ..Default::default()
        };
        let report = crate::diff::semantic::read(scratch, &options, &self.engine.semantic, &self.repo.interrupt, true)?;
        let mut by_file: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in report.files {
            let names = by_file.entry(file.path.clone()).or_default();
            for symbol in &file.symbols {
                names.insert(symbol.name.clone());
            }
            if let Some(from) = file.from {
                by_file.entry(from).or_default().extend(file.symbols.iter().map(|symbol| symbol.name.clone()));
            }
        }
        let by_file = Arc::new(by_file);
        self.symbols.insert((base, tip), by_file.clone());
        Ok(by_file)
    }
}

/// The lines of `base` both `ours` and `theirs` change (1-based first and last), joined where they
/// touch, at most [`MAX_PER_FILE`]. An insertion between two lines counts as changing the line
/// after it.
fn overlap(base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<[u32; 2]> {
    let ranges = |new: &[u8]| -> Vec<(u32, u32)> {
        let input = gix::diff::blob::InternedInput::new(
            gix::diff::blob::sources::byte_lines(base),
            gix::diff::blob::sources::byte_lines(new),
        );
        let mut diff = gix::diff::blob::Diff::compute(gix::diff::blob::Algorithm::Myers, &input);
        diff.postprocess_lines(&input);
        diff.hunks().map(|hunk| (hunk.before.start, hunk.before.end.max(hunk.before.start + 1))).collect()
    };
    let (ours, theirs) = (ranges(ours), ranges(theirs));
    let mut out: Vec<[u32; 2]> = Vec::new();
    for (start, end) in &ours {
        for (other_start, other_end) in &theirs {
            let (from, to) = ((*start).max(*other_start), (*end).min(*other_end));
            if from < to {
                match out.last_mut() {
                    Some(last) if last[1] >= from => last[1] = last[1].max(to),
                    _ => out.push([from + 1, to]),
                }
            }
        }
    }
    out.truncate(MAX_PER_FILE);
    out
}

#[cfg(test)]
mod tests {
    use super::overlap;

    #[test]
    fn overlap_names_the_base_lines_both_sides_changed() {
        let base = b"a\nb\nc\nd\ne\nf\n";
        let ours = b"a\nB\nC\nd\ne\nf\n";
        let theirs = b"a\nb\nX\nd\ne\nF\n";
        assert_eq!(overlap(base, ours, theirs), vec![[3, 3]]);
        let apart = b"a\nb\nc\nd\ne\nZ\n";
        assert_eq!(overlap(base, ours, apart), Vec::<[u32; 2]>::new());
    }
}
