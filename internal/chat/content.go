package chat

import (
	"fmt"
	"strconv"
	"strings"
)

// Vision placeholders the template prints for image and video parts.
const (
	imagePlaceholder = "<|vision_start|><|image_pad|><|vision_end|>"
	videoPlaceholder = "<|vision_start|><|video_pad|><|vision_end|>"
)

// renderContent is the template's render_content macro. content is nil when the message has no
// "content" member (Jinja's undefined). countVision is do_vision_count: only the main message loop
// numbers images and videos. The result is not trimmed; callers apply |trim as the template does.
func (r *renderer) renderContent(content *value, countVision, isSystem bool) (string, error) {
	if content == nil {
		return "", nil
	}
	switch content.kind {
	case kString:
		return content.str, nil
	case kNull:
		return "", nil
	case kArray:
		var sb strings.Builder
		for _, item := range content.arr {
			if err := r.renderPart(&sb, item, countVision, isSystem); err != nil {
				return "", err
			}
		}
		return sb.String(), nil
	}
	return "", raise("Unexpected content type.")
}

// renderPart renders one element of a content list. Jinja's `'image' in item` is a key test for an
// object, a substring test for a string and a membership test for a list, and item.type / item.text
// are undefined for anything but an object; renderPart follows all three. Other element types
// (numbers, booleans, null) make Python raise a TypeError, reported here as an error.
func (r *renderer) renderPart(sb *strings.Builder, item *value, countVision, isSystem bool) error {
	in := func(key string) (bool, error) {
		switch item.kind {
		case kObject:
			return item.has(key), nil
		case kString:
			return strings.Contains(item.str, key), nil
		case kArray:
			for _, x := range item.arr {
				if x.kind == kString && x.str == key {
					return true, nil
				}
			}
			return false, nil
		}
		return false, fmt.Errorf("content part of JSON type %s is not supported", kindName(item.kind))
	}
	typeIs := func(t string) bool {
		x := item.get("type")
		return x != nil && x.kind == kString && x.str == t
	}
	hasImage, err := in("image")
	if err != nil {
		return err
	}
	hasImageURL, _ := in("image_url")
	hasVideo, _ := in("video")
	hasText, _ := in("text")
	switch {
	case hasImage || hasImageURL || typeIs("image"):
		if isSystem {
			return raise("System message cannot contain images.")
		}
		if countVision {
			r.images++
		}
		if r.addVisionID {
			sb.WriteString("Picture " + strconv.Itoa(r.images) + ": ")
		}
		sb.WriteString(imagePlaceholder)
	case hasVideo || typeIs("video"):
		if isSystem {
			return raise("System message cannot contain videos.")
		}
		if countVision {
			r.videos++
		}
		if r.addVisionID {
			sb.WriteString("Video " + strconv.Itoa(r.videos) + ": ")
		}
		sb.WriteString(videoPlaceholder)
	case hasText:
		text := item.get("text") // undefined (prints nothing) unless item is an object
		if text == nil {
			return nil
		}
		s, err := pyStr(text)
		if err != nil {
			return fmt.Errorf("content part text: %w", err)
		}
		sb.WriteString(s)
	default:
		return raise("Unexpected item type in content.")
	}
	return nil
}

// kindName names a JSON type for error messages.
func kindName(k kind) string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}
