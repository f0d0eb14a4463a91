//! The reasons a task's workload fails below the tool, as clients and Events name them.

/// Why a task's workload failed below the tool (the JSON-RPC error's `data.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureReason {
    /// The tool image could not be pulled (or its name is invalid).
    ImagePullFailed,
    /// The tool container was killed for exceeding its memory limit.
    OomKilled,
    /// The Job's (or pod's) active deadline passed.
    DeadlineExceeded,
    /// The pod was evicted, preempted or disrupted by the node or the eviction API.
    Evicted,
    /// The pod was deleted before the tool container finished.
    PodDeleted,
    /// The task's Job was deleted before the task finished.
    JobDeleted,
    /// The container runtime could not start the tool container.
    ContainerStartFailed,
    /// The tool's result message exceeded the result size bound.
    ResultTooLarge,
    /// The task names a tool that does not exist (any more).
    ToolNotFound,
    /// The tool exists but its Job cannot be built from it.
    ToolInvalid,
    /// The McpTool answering to the task's tool is not the object (UID), or not the spec
    /// (generation), the call was authorized on; no Job was created.
    ToolChanged,
    /// The tool's pod template asks for what the operator's tool policy does not allow.
    TemplateNotAllowed,
    /// The call's arguments (or start-input answers) are larger than a container can receive.
    ArgumentsTooLarge,
    /// A Job of the task's name exists that the task does not own; it is left alone.
    JobConflict,
    /// The API server refused to create the task's Job (quota, admission webhook, invalid).
    JobRefused,
    /// The API server refused every pod the Job tried to create (Pod Security, quota).
    PodRefused,
    /// A Secret or ConfigMap the tool container needs is missing, past a grace period.
    ContainerConfigError,
    /// No node could take the pod before the start deadline.
    Unschedulable,
    /// The client's answers are too large to hand to the tool container.
    InputTooLarge,
    /// The stopped tool container's output could not be read whole.
    OutputUnavailable,
    /// The task's status would make the object larger than its size budget.
    StatusTooLarge,
    /// The API server refused to store the task's status (too large, or invalid).
    StatusRefused,
    /// The pod's node was lost (unreachable or not ready, so the pod was evicted by its
    /// NoExecute taint) or removed, before the tool container finished.
    NodeLost,
    /// The tool printed nothing for longer than its `McpTool.spec.idleTimeoutSeconds`.
    IdleTimeout,
    /// The Job's queue (Kueue) took its admission back while the tool ran (preemption or
    /// eviction), and the tool does not retry on disruption.
    Preempted,
    /// A volume of the pod (a Secret or ConfigMap that does not exist, as a rule) failed to
    /// mount for longer than the grace period: the kubelet's `FailedMount` Event says which.
    VolumeMountFailed,
    /// The tool container did not start within the start timeout, whatever it waited for.
    StartTimeout,
    /// The Job's queue (Kueue) did not admit it within the admission timeout: the queue may
    /// not exist, or lack the quota.
    NotAdmitted,
    /// The task waited for the client's answers longer than its input timeout.
    InputTimeout,
    /// The warm pod the task claimed did not answer the claim within the claim timeout;
    /// whether the tool started is unknown, so the call was not started again.
    ClaimUnanswered,
}

impl FailureReason {
    /// The value of `error.data.reason`, and the Event reason (PascalCase).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ImagePullFailed => "ImagePullFailed",
            Self::OomKilled => "OOMKilled",
            Self::DeadlineExceeded => "DeadlineExceeded",
            Self::Evicted => "Evicted",
            Self::PodDeleted => "PodDeleted",
            Self::JobDeleted => "JobDeleted",
            Self::ContainerStartFailed => "ContainerStartFailed",
            Self::ResultTooLarge => "ResultTooLarge",
            Self::ToolNotFound => "ToolNotFound",
            Self::ToolInvalid => "ToolInvalid",
            Self::TemplateNotAllowed => "TemplateNotAllowed",
            Self::ArgumentsTooLarge => "ArgumentsTooLarge",
            Self::JobConflict => "JobConflict",
            Self::JobRefused => "JobRefused",
            Self::PodRefused => "PodRefused",
            Self::ContainerConfigError => "ContainerConfigError",
            Self::Unschedulable => "Unschedulable",
            Self::InputTooLarge => "InputTooLarge",
            Self::OutputUnavailable => "OutputUnavailable",
            Self::StatusTooLarge => "StatusTooLarge",
            Self::StatusRefused => "StatusRefused",
            Self::NodeLost => "NodeLost",
            Self::IdleTimeout => "IdleTimeout",
            Self::Preempted => "Preempted",
            Self::VolumeMountFailed => "VolumeMountFailed",
            Self::StartTimeout => "StartTimeout",
            Self::NotAdmitted => "NotAdmitted",
            Self::InputTimeout => "InputTimeout",
            Self::ToolChanged => "ToolChanged",
            Self::ClaimUnanswered => "ClaimUnanswered",
        }
    }

    /// One sentence for `error.message` and `statusMessage`.
    pub fn message(self) -> &'static str {
        match self {
            Self::ImagePullFailed => "The tool's container image could not be pulled",
            Self::OomKilled => "The tool container was killed because it ran out of memory",
            Self::DeadlineExceeded => "The task ran longer than the tool's deadline",
            Self::Evicted => "The task's pod was evicted before the tool finished",
            Self::PodDeleted => "The task's pod was deleted before the tool finished",
            Self::JobDeleted => "The task's Job was deleted before the tool finished",
            Self::ContainerStartFailed => "The tool container could not be started",
            Self::ResultTooLarge => "The tool's result is too large to store",
            Self::ToolNotFound => "The task's tool does not exist",
            Self::ToolInvalid => "The task's tool is invalid and cannot run",
            Self::ToolChanged => {
                "The task's tool changed after the call was authorized, so it was not run"
            }
            Self::TemplateNotAllowed => {
                "The task's tool asks for what the operator's tool policy does not allow"
            }
            Self::ArgumentsTooLarge => {
                "The call's arguments are too large to give to the tool container"
            }
            Self::JobConflict => {
                "A Job of the task's name exists that this task does not own; it was left alone"
            }
            Self::JobRefused => "The API server refused to create the task's Job",
            Self::PodRefused => "The API server refused to create the task's pod",
            Self::ContainerConfigError => {
                "The tool container's configuration (a Secret or ConfigMap) is missing"
            }
            Self::Unschedulable => "No node could run the task's pod before its start deadline",
            Self::InputTooLarge => {
                "The client's answers are too large to give to the tool container"
            }
            Self::OutputUnavailable => {
                "The tool's output could not be read whole, so it has no result"
            }
            Self::StatusTooLarge => "The task's outcome is too large to store",
            Self::StatusRefused => "The API server refused to store the task's outcome",
            Self::NodeLost => {
                "The task's node was lost (unreachable, not ready or removed) before the tool \
                 finished"
            }
            Self::IdleTimeout => "The tool printed nothing for longer than its idle timeout",
            Self::Preempted => {
                "The task's queue stopped its Job (preempted) before the tool finished"
            }
            Self::VolumeMountFailed => {
                "A volume of the task's pod (a Secret or ConfigMap) could not be mounted"
            }
            Self::StartTimeout => "The tool container did not start within the start timeout",
            Self::NotAdmitted => {
                "The task's queue did not admit its Job within the admission \
                                  timeout"
            }
            Self::InputTimeout => {
                "Nobody answered the task's input requests within its input \
                                   timeout"
            }
            Self::ClaimUnanswered => "The warm pod claimed for the task did not answer its claim",
        }
    }

    /// Whether this failure leaves a Job that would keep retrying (pulling, scheduling,
    /// creating pods) until its deadline: the operator then deletes it.
    pub fn stops_job(self) -> bool {
        matches!(
            self,
            Self::ImagePullFailed
                | Self::PodRefused
                | Self::ContainerConfigError
                | Self::Unschedulable
                | Self::InputTooLarge
                | Self::NodeLost
                | Self::IdleTimeout
                | Self::Preempted
                | Self::VolumeMountFailed
                | Self::StartTimeout
                | Self::NotAdmitted
                | Self::InputTimeout
                | Self::ClaimUnanswered
        )
    }
}
