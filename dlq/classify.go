package dlq

import (
	"errors"
	"fmt"
)

// Classifier is implemented by errors that name their own class. The class groups dead letters
// in a replay's report and lets a replay select them, so it should name a cause ("schema",
// "validation.range"), not an instance.
type Classifier interface {
	ErrorClass() string
}

// ErrorClass returns the class of err: the ErrorClass of the first error in err's tree (in
// [errors.As] order) that implements [Classifier] and returns a non-empty class; otherwise the
// Go type name of err, looking through the wrappers made by [fmt.Errorf] and [errors.Join]
// (first branch) so that the class is the type of the cause, for example "*strconv.NumError".
// A nil err has the empty class.
func ErrorClass(err error) string {
	if err == nil {
		return ""
	}
	var c Classifier
	if errors.As(err, &c) {
		if class := c.ErrorClass(); class != "" {
			return class
		}
	}
	for {
		name := fmt.Sprintf("%T", err)
		var next error
		switch name {
		case "*fmt.wrapError":
			next = errors.Unwrap(err)
		case "*fmt.wrapErrors", "*errors.joinError":
			if m, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range m.Unwrap() {
					if e != nil {
						next = e
						break
					}
				}
			}
		}
		if next == nil {
			return name
		}
		err = next
	}
}
