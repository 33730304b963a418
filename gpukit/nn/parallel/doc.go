// Package parallel splits a model across devices: model parallelism by
// layer placement, and GPipe's pipeline of micro-batches.
//
// A Pipeline is a list of stages, each a module whose parameters and
// buffers all live on one device. Forward runs the stages in order and
// copies each activation to the next stage's device (a peer copy, costed
// on the destination's clock: over NVLink when both profiles have it, as
// the A100 and H100 ones do, otherwise at the PCIe pinned rate).
// Autograd copies the gradients back the same way. With MicroBatches > 1
// the batch is cut into micro-batches that flow through the stages one
// after another (GPipe); the outputs are concatenated on the last device.
// Run eagerly, the values are those of the single-device model on the
// same micro-batches, bitwise (Reference runs that model).
//
// ForwardBackward runs a whole GPipe training step: the forwards of all
// micro-batches, then their backwards in reverse order, each flowing from
// the last stage to the first, with the gradient of each stage's input
// copied back to the previous device on its clock. ScheduleStep lays it
// out: both devices' timelines show the forward and the backward
// bubbles, and each interval carries the device's allocated memory
// around it. The gradients equal ReferenceStep's on one device, bitwise.
// With Order set to OneFOneB, each device alternates one forward and one
// backward after a short warm-up (PipeDream-Flush): the step is as long,
// and a device holds the activations of at most as many micro-batches as
// there are stages from it to the end, instead of all of them.
//
// The simulated devices keep independent clocks, so the time the pipeline
// would take is computed, not observed: Forward measures each stage's
// work and each copy on its device's clock, and Schedule lays those
// durations out as GPipe does (micro-batch m starts on stage s when stage
// s has finished micro-batch m-1 and the copy of m from stage s-1 has
// arrived). The idle time at the start and end of each device's timeline
// is the pipeline bubble, (S-1)/(M+S-1) of the run for S equal stages and
// M micro-batches without copies.
//
// Where says on which devices a module's tensors live. A module that owns
// none (ReLU, Dropout) has no device: code that reads the device of a
// layer's weight fails on such a layer (COURSE.md mistake 14); Where
// answers for any module, DeviceOf says when there is no answer.
package parallel
