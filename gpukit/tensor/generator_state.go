package tensor

import "fmt"

// DefaultGenerator returns the generator that random ops use when no
// WithGenerator option (or, for Dropout, no generator) is given.
func DefaultGenerator() *Generator { return defaultGen }

// State returns a copy of g's state (torch.Generator.get_state): restore
// it with SetState to draw the same numbers again, as activation
// checkpointing does to recompute the same dropout masks.
func (g *Generator) State() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, err := g.src.MarshalBinary()
	if err != nil {
		panic("tensor: internal error: " + err.Error())
	}
	return b
}

// SetState restores a state returned by State (torch.Generator.set_state).
func (g *Generator) SetState(state []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.src.UnmarshalBinary(state); err != nil {
		return fmt.Errorf("tensor: SetState: not a generator state: %w", err)
	}
	return nil
}
