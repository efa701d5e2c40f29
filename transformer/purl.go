package transformer

import (
	"strings"

	packageurl "github.com/package-url/packageurl-go"

	"github.com/bomstream/bomstream/schemas/imageref"
)

// imagePURL is the package URL of the image i per the purl "oci" type:
// pkg:oci/<last path segment, lower case>[@<digest>]?repository_url=<registry/repository>[&tag=<tag>].
// digest overrides the reference's own digest when not empty.
func imagePURL(i imageref.Image, digest string) string {
	if digest == "" {
		digest = i.Digest
	}
	name := i.Repository
	if j := strings.LastIndexByte(name, '/'); j >= 0 {
		name = name[j+1:]
	}
	q := packageurl.Qualifiers{{Key: "repository_url", Value: i.Name()}}
	if i.Tag != "" {
		q = append(q, packageurl.Qualifier{Key: "tag", Value: i.Tag})
	}
	return purlString(packageurl.NewPackageURL(packageurl.TypeOCI, "", strings.ToLower(name), digest, q, ""))
}

// hfPURL is the package URL of a Hugging Face model id ("name" or
// "org/name"), at rev, lower case, when not "".
func hfPURL(id, rev string) string {
	ns, name := "", id
	if j := strings.LastIndexByte(id, '/'); j >= 0 {
		ns, name = id[:j], id[j+1:]
	}
	return purlString(packageurl.NewPackageURL(packageurl.TypeHuggingface, ns, name, strings.ToLower(rev), nil, ""))
}

// purlString is the canonical form of p. packageurl-go percent-encodes
// every qualifier value as a URL query component; the purl specification's
// canonical form keeps "/" and ":" as they are (repository_url=docker.io/x/y)
// and writes a space as %20. Every "%" of its query starts an escape and a
// "+" stands for a space, so the replacement is exact.
func purlString(p *packageurl.PackageURL) string {
	s := p.ToString()
	path, query, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	return path + "?" + qualifierEscapes.Replace(query)
}

// qualifierEscapes turns packageurl-go's query escapes into the purl
// specification's.
var qualifierEscapes = strings.NewReplacer("%2F", "/", "%3A", ":", "+", "%20")
