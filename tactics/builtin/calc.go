package builtin

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// maxCalcDepth bounds the nesting of parentheses and signs, so that a
// hostile expression cannot exhaust the stack.
const maxCalcDepth = 64

// calculate evaluates an arithmetic expression over decimal numbers with
// + - * /, unary signs and parentheses, with the usual precedence and left
// associativity. It reports division by zero, overflow and malformed input
// as errors, naming the offending position.
//
// The grammar:
//
//	expr   = term { ("+" | "-") term }
//	term   = factor { ("*" | "/") factor }
//	factor = ("+" | "-") factor | number | "(" expr ")"
func calculate(expr string) (float64, error) {
	p := &calcParser{s: expr}
	p.skipSpace()
	if p.pos == len(p.s) {
		return 0, errors.New("empty expression")
	}
	v, err := p.expr(0)
	if err != nil {
		return 0, err
	}
	if p.pos < len(p.s) {
		return 0, p.errorf("unexpected %q", p.s[p.pos])
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errors.New("result out of range")
	}
	return v, nil
}

type calcParser struct {
	s   string
	pos int
}

func (p *calcParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *calcParser) skipSpace() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\n' || p.s[p.pos] == '\r') {
		p.pos++
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *calcParser) peek() byte {
	p.skipSpace()
	if p.pos == len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

func (p *calcParser) expr(depth int) (float64, error) {
	v, err := p.term(depth)
	if err != nil {
		return 0, err
	}
	for {
		op := p.peek()
		if op != '+' && op != '-' {
			return v, nil
		}
		p.pos++
		w, err := p.term(depth)
		if err != nil {
			return 0, err
		}
		if op == '+' {
			v += w
		} else {
			v -= w
		}
	}
}

func (p *calcParser) term(depth int) (float64, error) {
	v, err := p.factor(depth)
	if err != nil {
		return 0, err
	}
	for {
		op := p.peek()
		if op != '*' && op != '/' {
			return v, nil
		}
		at := p.pos
		p.pos++
		w, err := p.factor(depth)
		if err != nil {
			return 0, err
		}
		if op == '*' {
			v *= w
			continue
		}
		if w == 0 {
			p.pos = at
			return 0, p.errorf("division by zero")
		}
		v /= w
	}
}

func (p *calcParser) factor(depth int) (float64, error) {
	if depth >= maxCalcDepth {
		return 0, p.errorf("expression nested more than %d deep", maxCalcDepth)
	}
	switch c := p.peek(); {
	case c == 0:
		return 0, p.errorf("unexpected end of expression")
	case c == '+' || c == '-':
		p.pos++
		v, err := p.factor(depth + 1)
		if c == '-' {
			v = -v
		}
		return v, err
	case c == '(':
		p.pos++
		v, err := p.expr(depth + 1)
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, p.errorf("missing )")
		}
		p.pos++
		return v, nil
	case c == '.' || ('0' <= c && c <= '9'):
		return p.number()
	default:
		return 0, p.errorf("unexpected %q", c)
	}
}

// number reads digits with at most one decimal point and an optional
// exponent, such as 12, 0.5, .5, 3. or 1e-3.
func (p *calcParser) number() (float64, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.s) && '0' <= p.s[p.pos] && p.s[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	n := digits()
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		n += digits()
	}
	if n == 0 {
		p.pos = start
		return 0, p.errorf("malformed number")
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return 0, p.errorf("malformed exponent")
		}
	}
	text := p.s[start:p.pos]
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		p.pos = start
		return 0, p.errorf("number %q out of range", text)
	}
	return v, nil
}
