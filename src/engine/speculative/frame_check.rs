//! The speculative scheduler's last line of defence: every frame is checked exactly for
//! intersecting triangles before it is handed on, and a run whose frame would intersect stops
//! with an error instead of writing it.
//!
//! The KDS's certificates guarantee by construction that no pair passes through its layers. The
//! speculative scheduler's guarantee rests on its retrospective check seeing every pair that
//! came near and on frames being written only from committed runs; this check, independent of
//! both, keeps a bad frame from being written if either ever fails.

use crate::check::{audit_positions, AuditReport};
use crate::{Frame, FrameSink, RunError};

/// A frame sink that checks each frame exactly and hands on only clean ones (see the module
/// docs).
pub(super) struct CheckedFrames<'a> {
    sink: &'a mut dyn FrameSink,
}

impl<'a> CheckedFrames<'a> {
    /// Checks the frames bound for `sink`.
    pub(super) fn new(sink: &'a mut dyn FrameSink) -> Self {
        Self { sink }
    }
}

impl FrameSink for CheckedFrames<'_> {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        let mut report = AuditReport::default();
        let triangles = frame.model().triangles();
        // Cutoff 0: only intersections are looked for, not the closest distance.
        audit_positions(frame.positions, triangles, 0.0, frame.index, &mut report).map_err(
            |e| RunError::Internal {
                time: frame.time,
                event: 0,
                message: e.to_string(),
            },
        )?;
        if let Some(bad) = report.first_bad {
            return Err(RunError::Audit {
                time: frame.time,
                at: format!("frame {}", frame.index),
                message: format!(
                    "the speculative scheduler let triangles {} and {} intersect ({} \
                     intersecting pairs); the frame was not written. Run with \
                     contact.scheduler = \"kds\"",
                    bad.triangles[0], bad.triangles[1], report.intersecting_pairs
                ),
            });
        }
        self.sink.frame(frame)
    }
}
