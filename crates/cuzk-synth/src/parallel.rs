//! Parallel synthesis of a circuit made of independent pieces.

use std::collections::BTreeMap;
use std::time::Duration;

use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use crossbeam_channel::{RecvTimeoutError, TryRecvError};
use ff::Field;

/// Synthesizes `pieces` on rayon tasks, each into its own system of type
/// `CS` (ONE allocated first, as `ConstraintSystem::extend` expects), and
/// appends them to `root` in the order of `pieces`, each as soon as it and
/// every piece before it are done: the copies of the join overlap the
/// synthesis of the later pieces, and each piece is dropped once copied.
///
/// The result is the system `root` would be after synthesizing the pieces
/// one after the other with `synth`, when `CS::extend` keeps its contract
/// (bellperson's and cuzk's proving assignments do) and the pieces share no
/// variable. The first error in piece order is returned; later pieces are
/// still synthesized but not appended.
///
/// The calling task waits for the pieces by running other rayon tasks, so
/// this works on a pool of any size, one thread included.
pub fn synthesize_in_parallel<CS, P, F>(
    root: &mut CS,
    pieces: Vec<P>,
    synth: F,
) -> Result<(), SynthesisError>
where
    CS: ConstraintSystem<Fr>,
    P: Send,
    F: Fn(P, &mut CS) -> Result<(), SynthesisError> + Sync,
{
    let mut outcome = Ok(());
    in_order(
        pieces,
        |piece| {
            let mut part = CS::new();
            part.alloc_input(|| "one", || Ok(Fr::ONE))
                .and_then(|_| synth(piece, &mut part))
                .map(|()| part)
        },
        |_, part| match part {
            Ok(part) if outcome.is_ok() => root.extend(&part),
            Err(e) if outcome.is_ok() => outcome = Err(e),
            _ => {}
        },
    );
    outcome
}

/// Runs `work` on every piece on rayon tasks and hands the results to
/// `join` on the calling thread, in the order of `pieces` (with the
/// piece's index), each as soon as it and every result before it are
/// there; a result is dropped by `join` or right after it.
///
/// The calling task waits by running other rayon tasks, so this works on a
/// pool of any size, one thread included.
pub(crate) fn in_order<P, T, W, J>(pieces: Vec<P>, work: W, mut join: J)
where
    P: Send,
    T: Send,
    W: Fn(P) -> T + Sync,
    J: FnMut(usize, T) + Send,
{
    let (done, arrivals) = crossbeam_channel::unbounded::<(usize, T)>();
    rayon::scope(|scope| {
        for (index, piece) in pieces.into_iter().enumerate() {
            let done = done.clone();
            let work = &work;
            scope.spawn(move |_| {
                // The receiver lives until every piece has reported.
                let _ = done.send((index, work(piece)));
            });
        }
        drop(done);
        let mut waiting = BTreeMap::new();
        let mut next = 0;
        loop {
            let (index, result) = match arrivals.try_recv() {
                Ok(arrival) => arrival,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    // Help with the pieces; when there is nothing to run,
                    // wait a little for a piece another thread is finishing.
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        match arrivals.recv_timeout(Duration::from_micros(200)) {
                            Ok(arrival) => arrival,
                            Err(RecvTimeoutError::Timeout) => continue,
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    } else {
                        continue;
                    }
                }
            };
            waiting.insert(index, result);
            while let Some(result) = waiting.remove(&next) {
                join(next, result);
                next += 1;
            }
        }
    })
}
