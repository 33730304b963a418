package tensor

// BackwardFunc is the backward of a Custom function: given the gradient
// of the output, the tensors saved for backward and which inputs need a
// gradient, it returns one gradient per input (nil where none is needed),
// each with its input's shape.
type BackwardFunc func(grad *Tensor, saved []*Tensor, needs []bool) []*Tensor

// Custom attaches a hand-written backward to out, the result of a
// computation on inputs done outside autograd (torch.autograd.Function):
// when grad mode is on and an input requires grad, out gets a node named
// name that saves the tensors in save (they count in memory until
// backward, like any op's) and calls backward. Otherwise out is returned
// as it is. Like an op's backward, backward must keep no forward tensor
// other than those it saved; it runs with grad mode off (EnableGrad
// inside it to record a graph and call Backward, as reentrant activation
// checkpointing does).
func Custom(name string, out *Tensor, inputs, save []*Tensor, backward BackwardFunc) *Tensor {
	out.live(name)
	for _, t := range inputs {
		t.live(name)
	}
	if out.gradFn != nil {
		panicf("%s: the output already has a grad_fn (%s); compute it under NoGrad", name, out.gradFn.name)
	}
	return record(out, name, inputs, save, backwardFn(backward))
}
