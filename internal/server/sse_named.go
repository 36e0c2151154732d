package server

// named writes one event with an `event:` line (the Responses and Messages APIs' typed events).
func (s *sseWriter) named(typ string, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(b)+len(typ)+16)
	buf = append(buf, "event: "...)
	buf = append(buf, typ...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeLocked(buf)
	return s.err
}
