//! Every error the HTTP side answers: JSON `{"error": "...", "code": "..."}` with a status that
//! says whose fault it is, and the extractors that turn axum's plain-text rejections into it.

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

/// An error answer: its status, a stable machine-readable `code`, and a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable code: `bad_request`, `unauthorized`, `forbidden`, `csrf`, `cross_site`,
    /// `read_only`, `not_found`, `method_not_allowed`, `conflict`, `broken_queue`,
    /// `host_not_allowed`, `payload_too_large`, `request_timeout`, `throttled`, `timeout`,
    /// `redis_unavailable` or `internal`.
    pub code: &'static str,
    /// What went wrong, lowercase, for a person.
    pub message: String,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400: the request itself is wrong.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 404: no such job, entry, queue or periodic job.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 403 with a code saying which rule refused it.
    pub fn forbidden(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, code, message)
    }

    /// 413: the body is larger than the dashboard takes.
    pub(crate) fn payload_too_large() -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body is larger than the dashboard takes (--max-body-bytes)",
        )
    }

    /// 408: the body did not all arrive in time.
    pub(crate) fn body_too_slow() -> ApiError {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            "the request body did not arrive in time (--body-timeout)",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message, "code": self.code });
        (self.status, Json(body)).into_response()
    }
}

impl From<gator_core::Error> for ApiError {
    fn from(error: gator_core::Error) -> ApiError {
        use gator_core::Error as E;
        if error.is_connection() {
            // The dashboard stays up while Redis is away; each answer says so until it is back.
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "redis_unavailable",
                format!("redis is unavailable: {error}"),
            );
        }
        let message = error.to_string();
        match error {
            E::InvalidQueueName { .. }
            | E::InvalidTime { .. }
            | E::InvalidReplyKey { .. }
            | E::InvalidWorkflowId { .. }
            | E::InvalidCron { .. }
            | E::InvalidFlow { .. }
            | E::InvalidUnique { .. }
            | E::InvalidJobName { .. }
            | E::InvalidArgs { .. }
            | E::Json(_)
            | E::Rejected { .. } => ApiError::bad_request(message),
            E::UnknownPeriodic { .. } | E::UnknownWorkflow { .. } => ApiError::not_found(message),
            E::NotInCatalogue { .. } => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "unknown_job", message)
            }
            E::BrokenQueue { .. } => ApiError::new(StatusCode::CONFLICT, "broken_queue", message),
            E::BrokenKey { .. } => ApiError::new(StatusCode::CONFLICT, "broken_key", message),
            E::PayloadTooLarge { .. } => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
            }
            E::CancelRaced { .. } => ApiError::new(StatusCode::CONFLICT, "conflict", message),
            E::Redis(ref e) if e.is_timeout() => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "redis_unavailable",
                message,
            ),
            _ => {
                tracing::error!(error = %message, "request failed");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
            }
        }
    }
}

/// What a handler returns: a value serialized as JSON, or an [`ApiError`].
pub type ApiResult<T> = Result<Json<T>, ApiError>;

/// `axum::Json`, but a body that does not parse is a JSON 400 like every other error.
#[derive(Debug)]
pub struct Body<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(Body(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

/// A body that does not parse is a 400; one cut off at the size limit a 413, and one cut off
/// by the body deadline a 408 (see `crate::layers`).
fn json_rejection(rejection: JsonRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::payload_too_large();
    }
    // Each router layer boxes the body's error once more: look all the way down.
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&rejection);
    while let Some(error) = source {
        if error.is::<http_body_util::LengthLimitError>() {
            return ApiError::payload_too_large();
        }
        if error.is::<tower_http::timeout::TimeoutError>() {
            return ApiError::body_too_slow();
        }
        source = error.source();
    }
    ApiError::bad_request(format!("invalid JSON body: {}", rejection.body_text()))
}

/// `axum::extract::Query` with a JSON 400.
#[derive(Debug)]
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Params(q.0))
            .map_err(|r: QueryRejection| {
                ApiError::bad_request(format!("invalid query: {}", r.body_text()))
            })
    }
}

/// `axum::extract::Path` with a JSON 400.
#[derive(Debug)]
pub struct Segments<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Segments<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Segments(p.0))
            .map_err(|r: PathRejection| {
                ApiError::bad_request(format!("invalid path: {}", r.body_text()))
            })
    }
}
