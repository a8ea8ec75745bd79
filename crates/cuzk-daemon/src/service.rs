//! The gRPC service: `cuzk.v1.ProvingEngine`'s eight methods over the
//! [`Daemon`]. Blocking work (checking a C1, the journal's fsync) runs on
//! tokio's blocking pool; a client that disconnects mid-`Prove` drops only
//! its own wait, never the job.

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use crate::daemon::{check_envelope, check_internal_envelope, Daemon};
use crate::error::RequestError;
use crate::metrics;
use crate::proto::cuzk_proving_engine_server::CuzkProvingEngine;
use crate::proto::proving_engine_server::ProvingEngine;
use crate::proto::*;

/// The service (clone per listener).
#[derive(Debug, Clone)]
pub(crate) struct Service {
    daemon: Arc<Daemon>,
}

impl Service {
    /// The service over `daemon`.
    pub(crate) fn new(daemon: Arc<Daemon>) -> Self {
        Service { daemon }
    }

    async fn submit(&self, req: SubmitProofRequest) -> Result<SubmitProofResponse, RequestError> {
        self.submit_checked(req, check_envelope).await
    }

    /// A submission whose envelope `envelope` checks (Curio's kinds, or
    /// also the daemon's own aggregation kind).
    async fn submit_checked(
        &self,
        req: SubmitProofRequest,
        envelope: fn(&SubmitProofRequest) -> Result<Priority, RequestError>,
    ) -> Result<SubmitProofResponse, RequestError> {
        let result = match envelope(&req) {
            Ok(priority) => {
                let d = Arc::clone(&self.daemon);
                tokio::task::spawn_blocking(move || d.submit(req, priority))
                    .await
                    .unwrap_or_else(|e| {
                        Err(RequestError::Internal(format!(
                            "checking the request panicked: {e}"
                        )))
                    })
            }
            Err(e) => Err(e),
        };
        if let Err(e) = &result {
            tracing::info!(error = %e, "submission refused");
            self.daemon.count_rejection(e);
        }
        result
    }
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(
        &self,
        request: Request<SubmitProofRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        Ok(Response::new(self.submit(request.into_inner()).await?))
    }

    async fn await_proof(
        &self,
        request: Request<AwaitProofRequest>,
    ) -> Result<Response<AwaitProofResponse>, Status> {
        let r = request.into_inner();
        let timeout = (r.timeout_ms > 0).then(|| Duration::from_millis(r.timeout_ms));
        Ok(Response::new(
            self.daemon.await_job(&r.job_id, timeout).await?,
        ))
    }

    async fn prove(
        &self,
        request: Request<ProveRequest>,
    ) -> Result<Response<ProveResponse>, Status> {
        let submit = request.into_inner().submit.ok_or_else(|| {
            Status::invalid_argument(
                "ProveRequest.submit is missing: it carries the SubmitProofRequest",
            )
        })?;
        let accepted = self.submit(submit).await?;
        let result = self.daemon.await_job(&accepted.job_id, None).await?;
        Ok(Response::new(ProveResponse {
            result: Some(result),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<CancelProofRequest>,
    ) -> Result<Response<CancelProofResponse>, Status> {
        let was_running = self.daemon.cancel(&request.into_inner().job_id)?;
        Ok(Response::new(CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        Ok(Response::new(metrics::status(&self.daemon)))
    }

    async fn get_metrics(
        &self,
        _request: Request<GetMetricsRequest>,
    ) -> Result<Response<GetMetricsResponse>, Status> {
        Ok(Response::new(GetMetricsResponse {
            prometheus_text: metrics::prometheus_text(&self.daemon),
        }))
    }

    async fn preload_srs(
        &self,
        request: Request<PreloadSrsRequest>,
    ) -> Result<Response<PreloadSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let srs = Arc::clone(self.daemon.srs());
        let (already_loaded, took) = tokio::task::spawn_blocking(move || srs.preload(&id))
            .await
            .map_err(|e| Status::internal(format!("loading the key panicked: {e}")))?
            .map_err(srs_status)?;
        Ok(Response::new(PreloadSrsResponse {
            already_loaded,
            load_time_ms: took.as_millis() as u64,
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<EvictSrsRequest>,
    ) -> Result<Response<EvictSrsResponse>, Status> {
        let (was_loaded, freed_bytes) = self
            .daemon
            .srs()
            .evict(&request.into_inner().circuit_id)
            .map_err(srs_status)?;
        Ok(Response::new(EvictSrsResponse {
            was_loaded,
            freed_bytes,
        }))
    }
}

fn srs_status(e: crate::error::SrsError) -> Status {
    use crate::error::SrsError;
    // Every cause, once each: the key file's I/O or format error is the useful part.
    let message = cuzk_pipeline::ErrorChain(&e).to_string();
    match e {
        SrsError::UnknownCircuit { .. } => Status::invalid_argument(message),
        SrsError::Key { .. } | SrsError::LoadFailed { .. } | SrsError::InUse { .. } => {
            Status::failed_precondition(message)
        }
        SrsError::TooLarge { .. } | SrsError::NeverFits { .. } => {
            Status::resource_exhausted(message)
        }
    }
}

/// cuzk's own RPCs (`proto/cuzk/v1/cuzk_local.proto`), beside Curio's
/// contract: a C1 read from a file on this machine, and aggregation jobs.
/// The jobs they make are the daemon's like any other (`AwaitProof`,
/// `CancelProof`, `GetStatus`, the journal).
#[tonic::async_trait]
impl CuzkProvingEngine for Service {
    async fn submit_proof_file(
        &self,
        request: Request<SubmitProofFileRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        let r = request.into_inner();
        let refused = |e: RequestError| {
            tracing::info!(error = %e, "submission refused");
            self.daemon.count_rejection(&e);
            Status::from(e)
        };
        let mut submit = r.submit.ok_or_else(|| {
            refused(RequestError::InvalidArgument(
                "SubmitProofFileRequest.submit is missing: it carries the SubmitProofRequest"
                    .into(),
            ))
        })?;
        check_envelope(&submit).map_err(refused)?;
        if submit.proof_kind != ProofKind::PorepSealCommit as i32 {
            return Err(refused(RequestError::InvalidArgument(format!(
                "proof_kind {}: SubmitProofFile takes a POREP_SEAL_COMMIT's C1 output (the other \
                 kinds' vanilla proofs fit a message)",
                submit.proof_kind
            ))));
        }
        if !submit.vanilla_proof.is_empty() {
            return Err(refused(RequestError::InvalidArgument(
                "submit.vanilla_proof is set: SubmitProofFile reads it from vanilla_proof_path; \
                 give one of the two"
                    .into(),
            )));
        }
        if r.vanilla_proof_path.is_empty() {
            return Err(refused(RequestError::InvalidArgument(
                "vanilla_proof_path is empty: the C1 output's file on the daemon's machine".into(),
            )));
        }
        let d = Arc::clone(&self.daemon);
        let path = r.vanilla_proof_path;
        let read = tokio::task::spawn_blocking(move || {
            let limit = d.settings().max_queued_bytes;
            d.settings()
                .local_files
                .read("vanilla_proof_path", &path, limit)
        })
        .await
        .map_err(|e| Status::internal(format!("reading the file panicked: {e}")))?;
        // The job holds the content, journaled like SubmitProof's: the same
        // C1 inline or from a file is the same request.
        submit.vanilla_proof = read.map_err(refused)?;
        Ok(Response::new(self.submit(submit).await?))
    }

    async fn submit_aggregate(
        &self,
        request: Request<SubmitAggregateRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        let r = request.into_inner();
        let d = Arc::clone(&self.daemon);
        let made = tokio::task::spawn_blocking(move || {
            let limit = d.settings().max_queued_bytes;
            crate::aggregate::to_submit(r, d.params(), &d.settings().local_files, limit)
        })
        .await
        .map_err(|e| Status::internal(format!("checking the request panicked: {e}")))?;
        let submit = match made {
            Ok(s) => s,
            Err(e) => {
                tracing::info!(error = %e, "submission refused");
                self.daemon.count_rejection(&e);
                return Err(e.into());
            }
        };
        Ok(Response::new(
            self.submit_checked(submit, check_internal_envelope).await?,
        ))
    }
}
