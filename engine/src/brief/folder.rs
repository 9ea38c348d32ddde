//! `repo.brief` on a folder that is no work tree but holds checkouts (issue 35): an agent started
//! in `~/src` learns which checkouts need attention in one call. The answer is `fleet.radar`'s for
//! that folder, read as the radar reads a folder of `repoPaths` (the checkouts at most
//! [`crate::fleet::radar::SCAN_DEPTH`] levels down, the scan bounded and its bound said in
//! `scanned`).

use serde::Serialize;

use crate::budget::{Budgeted, Measure};
use crate::engine::Engine;
use crate::error::{Error, InvalidReason, Result};
use crate::fleet::radar::{self, Radar};
use crate::fleet::{Target, Targets};

/// A folder's brief: the radar of the checkouts below it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FolderBrief {
    /// `fleet.radar`'s answer for the folder.
    pub fleet: Radar,
}

impl Engine {
    /// The brief of `folder`, a directory outside any repository: `fleet.radar` of the checkouts
    /// below it, cut to `max_tokens` as measured by `measure`.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`]: `not_a_repository` when the scan found no checkout below
    /// `folder` (or it is no folder), `budget_below_floor` when the radar's counts alone exceed
    /// `max_tokens`.
    pub fn folder_brief(
        &self,
        folder: &str,
        now: i64,
        max_tokens: usize,
        measure: &mut Measure<'_, FolderBrief>,
    ) -> Result<Budgeted<FolderBrief>> {
        let targets = Targets::Given(vec![Target { path: folder.to_owned(), label: None }]);
        let options = radar::Options { max_repos: crate::fleet::registry::MAX_REPOSITORIES, now };
        let mut wrapped = |candidate: &Budgeted<Radar>| {
            measure(&Budgeted {
                data: FolderBrief { fleet: candidate.data.clone() },
                omitted: candidate.omitted.clone(),
            })
        };
        let read = self.radar(&targets, &options, max_tokens, &mut wrapped)?;
        if read.data.scanned.iter().all(|scanned| scanned.found == 0) {
            // A scan its own bound stopped says so: checkouts may lie below the directories it looked at.
            let how_far = if read.data.scanned.iter().any(|scanned| scanned.stopped) {
                format!(
                    "in the first {} directories it looked at, {} levels down (the scan stops there: name a folder \
                     nearer the checkouts)",
                    radar::MAX_SCANNED_DIRECTORIES,
                    radar::SCAN_DEPTH
                )
            } else {
                format!("{} levels down", radar::SCAN_DEPTH)
            };
            return Err(Error::invalid(
                InvalidReason::NotARepository,
                format!("{folder} is not inside a Git work tree or git dir, and holds no checkout {how_far}"),
            ));
        }
        Ok(Budgeted { data: FolderBrief { fleet: read.data }, omitted: read.omitted })
    }
}
