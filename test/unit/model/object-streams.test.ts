import { describe, expect, it } from 'vitest'
import { customObjects } from '../../../connectors/custom-objects.js'
import { objectStream, parseObjectStream } from '../../../src/model/streams.js'

describe('object stream names', () => {
  it('names one custom object after the custom-objects stream, and reads the slug back', () => {
    expect(objectStream('pet-care')).toBe(`${customObjects.name}:pet-care`)
    expect(parseObjectStream(objectStream('pet_care-2'))).toBe('pet_care-2')
  })

  it.each(['objects', 'objects:', 'jobs:pet-care', 'objects:a:b', 'objects:a b', 'xobjects:a'])('reads no slug from %j', (name) => {
    expect(parseObjectStream(name)).toBeUndefined()
  })
})
