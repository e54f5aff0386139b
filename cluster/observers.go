package cluster

// Observers returns an observer for ElectorConfig.Observer that hands every event to each of
// obs in turn, in the order given, skipping nil ones: one election can feed a metrics
// collector, a log and a health check at once. Each observer runs on the election's goroutine
// (see ElectorConfig.Observer), so each must return quickly. It returns nil when no observer
// is left, which an Elector treats as no observer.
func Observers(obs ...func(Event)) func(Event) {
	var list []func(Event)
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return func(ev Event) {
		for _, o := range list {
			o(ev)
		}
	}
}
