package amp

// MarkScaledForTest records a scaled loss without computing one, so that
// Update grows the scale (for FuzzGradScaler).
func (s *GradScaler) MarkScaledForTest() { s.scaled = true }
