//! Prometheus metrics (`GET /metrics`), through `prometheus-client`.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UploadLabels {
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    status: u16,
}

/// Every metric the collector exports.
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    uploads: Family<UploadLabels, Counter>,
    requests: Family<RequestLabels, Histogram>,
    database: Histogram,
    queued: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric registered.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("sampler_collector");
        let uploads = Family::<UploadLabels, Counter>::default();
        registry.register(
            "uploads",
            "Uploads by result: accepted, duplicate, or the reason of a refusal",
            uploads.clone(),
        );
        let requests = Family::<RequestLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.0, 16))
        });
        registry.register(
            "request_duration_seconds",
            "Request latency by route and status",
            requests.clone(),
        );
        let database = Histogram::new(exponential_buckets(0.0005, 2.0, 16));
        registry.register(
            "database_batch_seconds",
            "Time of each ingest batch in the database, commit included",
            database.clone(),
        );
        let queued = Gauge::default();
        registry.register(
            "ingest_queue",
            "Uploads waiting for the writer",
            queued.clone(),
        );
        Self {
            registry: Arc::new(registry),
            uploads,
            requests,
            database,
            queued,
        }
    }

    /// Counts an upload's result (`accepted`, `duplicate`, or a reason).
    pub fn upload(&self, result: &str) {
        self.uploads
            .get_or_create(&UploadLabels {
                result: result.to_owned(),
            })
            .inc();
    }

    /// Records a request's latency.
    pub fn request(&self, route: &str, status: u16, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                route: route.to_owned(),
                status,
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Records a writer batch's time in the database.
    pub fn observe_database(&self, elapsed: Duration) {
        self.database.observe(elapsed.as_secs_f64());
    }

    /// Sets the queue length gauge.
    pub fn set_queued(&self, queued: usize) {
        self.queued.set(queued as i64);
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String");
        out
    }
}
