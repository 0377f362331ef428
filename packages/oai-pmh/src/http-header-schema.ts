// The schema of the http_header metadata format (mod_oai's own schema for this namespace is not
// published any more), served by both providers at HTTP_HEADER_SCHEMA_PATH below their base
// URL. Kept as text, not as a file beside the code: the `oaibag` command runs bundled.

/** Where both providers serve the schema, below their base URL. */
export const HTTP_HEADER_SCHEMA_PATH = 'oai/schemas/http_header.xsd';

export const HTTP_HEADER_SCHEMA = `<?xml version="1.0" encoding="UTF-8"?>
<!--
  The http_header metadata format of oaibag-repository: the HTTP response headers a GET of
  the resource returns, one element per header, named after the header (Content-Type,
  Last-Modified, ...). Header names that are not XML names are written as
  <http:field name="...">value</http:field>. Written for oaibag (mod_oai's own schema for
  this namespace is not published any more); it checks the structure, not each header.
-->
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"
           xmlns:http="http://www.openarchives.org/OAI/2.0/http_header/"
           targetNamespace="http://www.openarchives.org/OAI/2.0/http_header/"
           elementFormDefault="qualified">
  <xs:element name="header">
    <xs:complexType>
      <xs:sequence>
        <xs:any namespace="##targetNamespace" processContents="skip" minOccurs="0" maxOccurs="unbounded"/>
      </xs:sequence>
    </xs:complexType>
  </xs:element>
</xs:schema>
`;
