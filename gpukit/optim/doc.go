// Package optim holds gpukit's optimizers and learning-rate schedules,
// with PyTorch's update formulas and defaults: SGD (momentum, dampening,
// Nesterov, weight decay), Adam and AdamW (amsgrad too); StepLR and cosine
// annealing.
//
// State is allocated lazily, at a parameter's first Step, exactly as
// PyTorch allocates it: SGD with momentum one buffer per parameter, Adam
// and AdamW two (exp_avg and exp_avg_sq). So a training loop's memory
// grows at the first optimizer step, by twice the model's size for Adam,
// which is where it grows on a real card. StateBytes says how much.
//
// Parameters come in groups with their own hyperparameters (Group); an
// optimizer with no parameters is refused with PyTorch's message
// ("optimizer got an empty parameter list"), as are invalid
// hyperparameters ("Invalid learning rate: -1"); gpukit also refuses NaN
// and infinite ones, which PyTorch lets through. Errors start with
// "optim: "; methods without an error result (SetLR) panic with an
// *Error.
//
// SGD and Adam save and load their state (SaveFile, LoadFile) in
// .safetensors files laid out as PyTorch's optimizer.state_dict():
// "state.<i>.exp_avg" and friends, the param_groups as JSON metadata.
// Loading checks the kind, the groups, every shape and every value (a
// finite state, a whole step count, a non-negative exp_avg_sq) first and
// changes nothing on error.
package optim
